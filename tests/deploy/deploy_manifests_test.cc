// Offline validation of deploy/ (R-DIST-5 keys): every YAML
// file parses; the compose file and the Kubernetes manifests carry the
// required fields (kinds, apiVersions, selectors matching pod labels, an
// Indexed worker Job, keys mounted from the Secret, resource requests);
// compose and Kubernetes run the same image with the same surge arguments;
// and every flag they pass exists in `surge <command> --help` of the built
// binary. Each check is also shown to fail on a broken copy of the files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Problems = std::vector<std::string>;

const fs::path kDeploy = fs::path(SURGE_SOURCE_DIR) / "deploy";
// The non-root user of deploy/Dockerfile; the pods run as it.
constexpr int kImageUid = 10001;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// node[k1][k2]..., or an undefined node when a key is missing (yaml-cpp
// throws on a chained lookup through a missing key).
YAML::Node At(const YAML::Node& node, std::initializer_list<const char*> path) {
  YAML::Node current = node;
  for (const char* key : path) {
    if (!current.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& as_const = current;
    YAML::Node next = as_const[key];
    if (!next.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    current.reset(next);  // not operator=, which would overwrite the node itself
  }
  return current;
}

// `${VAR:-default}` -> default (what compose uses when VAR is unset); a
// plain string is returned unchanged; `${VAR}` without a default is kept
// (and reported by the checks, since Kubernetes could never match it).
std::string Resolve(const std::string& value) {
  static const std::regex kVar(R"(\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\})");
  return std::regex_replace(value, kVar, "$1");
}

std::vector<std::string> Strings(const YAML::Node& list) {
  std::vector<std::string> out;
  if (!list.IsSequence()) return out;
  for (const YAML::Node& item : list) out.push_back(Resolve(item.as<std::string>()));
  return out;
}

// The value following `flag` in `args`, or "" when absent.
std::string FlagValue(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) return args[i + 1];
  }
  return "";
}

// One surge process of a deployment: its role (the subcommand), image and
// arguments, from compose or from Kubernetes.
struct Role {
  std::string image;
  std::vector<std::string> args;
};

// ---- compose ----

// Roles by subcommand (sim-server, coordinator, worker) of the compose file.
std::map<std::string, Role> ComposeRoles(const YAML::Node& compose) {
  std::map<std::string, Role> roles;
  for (const auto& service : compose["services"]) {
    const std::vector<std::string> args = Strings(service.second["command"]);
    if (args.empty()) continue;
    roles[args[0]] = Role{Resolve(service.second["image"].as<std::string>("")), args};
  }
  return roles;
}

const YAML::Node ComposeService(const YAML::Node& compose, const std::string& command) {
  for (const auto& service : compose["services"]) {
    const YAML::Node cmd = service.second["command"];
    if (cmd.IsSequence() && cmd.size() > 0 && cmd[0].as<std::string>() == command) {
      return service.second;
    }
  }
  return YAML::Node();
}

// Container paths mounted into a compose service ("host:container[:ro]").
std::map<std::string, bool> ComposeMounts(const YAML::Node& service) {
  std::map<std::string, bool> mounts;  // container path -> read-only
  for (const std::string& volume : Strings(service["volumes"])) {
    std::vector<std::string> parts;
    std::stringstream in(volume);
    for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
    if (parts.size() >= 2) mounts[parts[1]] = parts.size() >= 3 && parts[2] == "ro";
  }
  return mounts;
}

Problems CheckCompose(const YAML::Node& compose) {
  Problems problems;
  if (!compose["services"].IsMap()) return {"compose: no services map"};
  const auto roles = ComposeRoles(compose);
  for (const char* role : {"sim-server", "coordinator", "worker"}) {
    if (roles.count(role) == 0) problems.push_back(absl::StrCat("compose: no service runs ", role));
  }
  if (!problems.empty()) return problems;
  const std::string image = roles.at("coordinator").image;
  for (const auto& [name, role] : roles) {
    if (role.image.empty() || role.image != image) {
      problems.push_back(absl::StrCat("compose: ", name, " image '", role.image,
                                      "' differs from the coordinator's '", image, "'"));
    }
  }
  const YAML::Node worker = ComposeService(compose, "worker");
  const YAML::Node coordinator = ComposeService(compose, "coordinator");
  if (worker["container_name"]) {
    problems.push_back("compose: worker has container_name (cannot be scaled)");
  }
  const YAML::Node replicas = At(worker, {"deploy", "replicas"});
  const YAML::Node coordinator_cmd = coordinator["command"];
  std::string expect_raw;
  for (size_t i = 0; i + 1 < coordinator_cmd.size(); ++i) {
    if (coordinator_cmd[i].as<std::string>() == "--expect-workers") {
      expect_raw = coordinator_cmd[i + 1].as<std::string>();
    }
  }
  if (!replicas || replicas.as<std::string>() != expect_raw) {
    problems.push_back(absl::StrCat("compose: worker deploy.replicas '",
                                    replicas ? replicas.as<std::string>() : "", "' is not the ",
                                    "coordinator's --expect-workers '", expect_raw, "'"));
  }
  // Key files come from a read-only mount, results go to a mount.
  for (const auto& [role_name, flags] : std::map<std::string, std::vector<std::string>>{
           {"coordinator", {"--curve-secret-key", "--curve-allow"}},
           {"worker", {"--curve-secret-key", "--curve-server-key"}}}) {
    const YAML::Node service = ComposeService(compose, role_name);
    const auto mounts = ComposeMounts(service);
    for (const std::string& flag : flags) {
      const std::string path = FlagValue(roles.at(role_name).args, flag);
      bool mounted_ro = false;
      for (const auto& [target, read_only] : mounts) {
        if (absl::StartsWith(path, target + "/") && read_only) mounted_ro = true;
      }
      if (path.empty() || !mounted_ro) {
        problems.push_back(absl::StrCat("compose: ", role_name, " ", flag, " '", path,
                                        "' is not in a read-only mounted folder"));
      }
    }
  }
  const std::string output_dir = FlagValue(roles.at("coordinator").args, "--output-dir");
  if (ComposeMounts(coordinator).count(output_dir) == 0) {
    problems.push_back(absl::StrCat("compose: coordinator --output-dir '", output_dir,
                                    "' is not a mounted folder"));
  }
  return problems;
}

// ---- Kubernetes ----

bool IsSubset(const YAML::Node& selector, const YAML::Node& labels) {
  if (!selector.IsMap() || selector.size() == 0) return false;
  for (const auto& pair : selector) {
    const YAML::Node label = At(labels, {pair.first.as<std::string>().c_str()});
    if (!label || label.as<std::string>() != pair.second.as<std::string>()) return false;
  }
  return true;
}

std::string Name(const YAML::Node& doc) {
  return absl::StrCat(doc["kind"].as<std::string>(""), "/",
                      At(doc, {"metadata", "name"}).as<std::string>(""));
}

// Roles by subcommand of the Kubernetes containers, with the pod spec and the
// workload they are in.
struct K8sRole {
  Role role;
  YAML::Node workload;
  YAML::Node pod_spec;
  YAML::Node container;
};

std::map<std::string, K8sRole> K8sRoles(const std::vector<YAML::Node>& docs) {
  std::map<std::string, K8sRole> roles;
  for (const YAML::Node& doc : docs) {
    const YAML::Node pod_spec = At(doc, {"spec", "template", "spec"});
    if (!pod_spec) continue;
    for (const YAML::Node& container : pod_spec["containers"]) {
      const std::vector<std::string> args = Strings(container["args"]);
      if (args.empty()) continue;
      roles[args[0]] =
          K8sRole{Role{container["image"].as<std::string>(""), args}, doc, pod_spec, container};
    }
  }
  return roles;
}

// Whether `path` (a file, or a folder when `is_dir`) is provided by a Secret
// volume item of the Secret `secret_name` mounted into `container`.
bool FromSecret(const K8sRole& k8s, const std::string& path, bool is_dir,
                const std::string& secret_name) {
  for (const YAML::Node& mount : k8s.container["volumeMounts"]) {
    const std::string mount_path = mount["mountPath"].as<std::string>("");
    for (const YAML::Node& volume : k8s.pod_spec["volumes"]) {
      if (volume["name"].as<std::string>("") != mount["name"].as<std::string>("")) continue;
      const YAML::Node secret = volume["secret"];
      if (!secret || secret["secretName"].as<std::string>("") != secret_name) continue;
      for (const YAML::Node& item : secret["items"]) {
        const std::string file = mount_path + "/" + item["path"].as<std::string>("");
        if (is_dir ? absl::StartsWith(file, path + "/") : file == path) return true;
      }
    }
  }
  return false;
}

Problems CheckK8s(const std::vector<YAML::Node>& docs) {
  Problems problems;
  static const std::set<std::pair<std::string, std::string>> kKnown = {
      {"v1", "Service"},
      {"v1", "PersistentVolumeClaim"},
      {"batch/v1", "Job"},
      {"apps/v1", "Deployment"}};
  std::set<std::string> claims;
  for (const YAML::Node& doc : docs) {
    const std::string api = doc["apiVersion"].as<std::string>("");
    const std::string kind = doc["kind"].as<std::string>("");
    if (kKnown.count({api, kind}) == 0) {
      problems.push_back(absl::StrCat("k8s: unexpected apiVersion/kind '", api, "'/'", kind, "'"));
    }
    if (At(doc, {"metadata", "name"}).as<std::string>("").empty()) {
      problems.push_back(absl::StrCat("k8s: ", kind, " without metadata.name"));
    }
    if (kind == "PersistentVolumeClaim")
      claims.insert(At(doc, {"metadata", "name"}).as<std::string>());
  }
  // Every Service selects the pods of some workload; Deployments select
  // their own template.
  for (const YAML::Node& doc : docs) {
    const std::string kind = doc["kind"].as<std::string>("");
    if (kind == "Service") {
      bool selects = false;
      for (const YAML::Node& other : docs) {
        if (IsSubset(At(doc, {"spec", "selector"}),
                     At(other, {"spec", "template", "metadata", "labels"}))) {
          selects = true;
        }
      }
      if (!selects) problems.push_back(absl::StrCat("k8s: ", Name(doc), " selects no pods"));
      if (!At(doc, {"spec", "ports"}).IsSequence() || At(doc, {"spec", "ports"}).size() == 0) {
        problems.push_back(absl::StrCat("k8s: ", Name(doc), " has no ports"));
      }
    }
    if (kind == "Deployment" && !IsSubset(At(doc, {"spec", "selector", "matchLabels"}),
                                          At(doc, {"spec", "template", "metadata", "labels"}))) {
      problems.push_back(absl::StrCat("k8s: ", Name(doc), " selector does not match its pods"));
    }
    if (const YAML::Node pod_spec = At(doc, {"spec", "template", "spec"})) {
      if (kind == "Job") {
        const std::string restart = pod_spec["restartPolicy"].as<std::string>("");
        if (restart != "Never" && restart != "OnFailure") {
          problems.push_back(absl::StrCat("k8s: ", Name(doc), " restartPolicy '", restart,
                                          "' (Never or OnFailure)"));
        }
      }
      if (At(pod_spec, {"securityContext", "runAsUser"}).as<int>(-1) != kImageUid ||
          !At(pod_spec, {"securityContext", "runAsNonRoot"}).as<bool>(false)) {
        problems.push_back(absl::StrCat("k8s: ", Name(doc), " does not run as non-root uid ",
                                        kImageUid, " (the image's user)"));
      }
      for (const YAML::Node& container : pod_spec["containers"]) {
        const YAML::Node requests = At(container, {"resources", "requests"});
        if (!At(requests, {"cpu"}) || !At(requests, {"memory"})) {
          problems.push_back(absl::StrCat("k8s: ", Name(doc), " container ",
                                          container["name"].as<std::string>(""),
                                          " lacks resources.requests cpu and memory"));
        }
      }
      for (const YAML::Node& volume : pod_spec["volumes"]) {
        const YAML::Node claim = At(volume, {"persistentVolumeClaim", "claimName"});
        if (claim && claims.count(claim.as<std::string>()) == 0) {
          problems.push_back(absl::StrCat("k8s: ", Name(doc), " claims '", claim.as<std::string>(),
                                          "', which no manifest defines"));
        }
      }
    }
  }
  const auto roles = K8sRoles(docs);
  for (const char* role : {"sim-server", "coordinator", "worker"}) {
    if (roles.count(role) == 0) problems.push_back(absl::StrCat("k8s: no container runs ", role));
  }
  if (!problems.empty()) return problems;
  const K8sRole& coordinator = roles.at("coordinator");
  const K8sRole& worker = roles.at("worker");
  if (coordinator.workload["kind"].as<std::string>("") != "Job") {
    problems.push_back("k8s: the coordinator is not a Job");
  }
  // The headless Service the workers connect to selects the coordinator.
  const std::string connect = FlagValue(worker.role.args, "--connect");
  bool headless = false;
  for (const YAML::Node& doc : docs) {
    if (doc["kind"].as<std::string>("") != "Service") continue;
    if (!absl::StrContains(connect,
                           "//" + At(doc, {"metadata", "name"}).as<std::string>("") + ":")) {
      continue;
    }
    headless = At(doc, {"spec", "clusterIP"}).as<std::string>("") == "None" &&
               IsSubset(At(doc, {"spec", "selector"}),
                        At(coordinator.workload, {"spec", "template", "metadata", "labels"}));
  }
  if (!headless) {
    problems.push_back(absl::StrCat("k8s: worker --connect '", connect,
                                    "' is not a headless Service selecting the coordinator"));
  }
  const YAML::Node job = worker.workload["spec"];
  if (worker.workload["kind"].as<std::string>("") != "Job" ||
      job["completionMode"].as<std::string>("") != "Indexed") {
    problems.push_back("k8s: the workers are not an Indexed Job (completionMode: Indexed)");
  }
  const std::string expect = FlagValue(coordinator.role.args, "--expect-workers");
  if (job["completions"].as<std::string>("") != expect ||
      job["parallelism"].as<std::string>("") != expect) {
    problems.push_back(absl::StrCat(
        "k8s: worker Job completions/parallelism '", job["completions"].as<std::string>(""), "'/'",
        job["parallelism"].as<std::string>(""), "' differ from --expect-workers '", expect, "'"));
  }
  // Keys come from the Secret surge-keys, mounted as files.
  for (const auto& [role_name, flags] :
       std::map<std::string, std::vector<std::pair<std::string, bool>>>{
           {"coordinator",
            {{"--curve-secret-key", false}, {"--curve-allow", true}, {"--api-key-file", false}}},
           {"sim-server", {{"--api-key-file", false}}},
           {"worker", {{"--curve-secret-key", false}, {"--curve-server-key", false}}}}) {
    for (const auto& [flag, is_dir] : flags) {
      const std::string path = FlagValue(roles.at(role_name).role.args, flag);
      if (path.empty() || !FromSecret(roles.at(role_name), path, is_dir, "surge-keys")) {
        problems.push_back(absl::StrCat("k8s: ", role_name, " ", flag, " '", path,
                                        "' is not mounted from the Secret surge-keys"));
      }
    }
  }
  return problems;
}

// ---- Kubernetes: operating it ----

// The sim server is ready only once GET /health answers on its --port.
void CheckReadiness(const K8sRole& sim, Problems& problems) {
  const YAML::Node probe = At(sim.container, {"readinessProbe", "httpGet"});
  std::string port = At(probe, {"port"}).as<std::string>("");
  for (const YAML::Node& p : sim.container["ports"]) {
    if (p["name"].as<std::string>("") == port) port = p["containerPort"].as<std::string>("");
  }
  if (At(probe, {"path"}).as<std::string>("") != "/health" ||
      port != FlagValue(sim.role.args, "--port")) {
    problems.push_back("k8s: the sim server has no readinessProbe httpGet /health on its --port");
  }
}

// Worker pods spread over nodes by host name, selecting the workers' own pods.
void CheckSpread(const K8sRole& worker, Problems& problems) {
  const YAML::Node labels = At(worker.workload, {"spec", "template", "metadata", "labels"});
  bool spread = false;
  for (const YAML::Node& c : worker.pod_spec["topologySpreadConstraints"]) {
    spread = spread || (c["topologyKey"].as<std::string>("") == "kubernetes.io/hostname" &&
                        IsSubset(At(c, {"labelSelector", "matchLabels"}), labels));
  }
  if (!spread) {
    problems.push_back(
        "k8s: worker pods have no topologySpreadConstraints over kubernetes.io/hostname "
        "selecting the worker pods");
  }
}

// Pod k of the Indexed Job asks for worker index k: --worker-index $(VAR)
// with VAR from the pod's job-completion-index annotation.
void CheckWorkerIndex(const K8sRole& worker, Problems& problems) {
  static const std::regex kVarRef(R"(^\$\(([A-Za-z_][A-Za-z0-9_]*)\)$)");
  std::smatch var;
  const std::string value = FlagValue(worker.role.args, "--worker-index");
  bool from_index = false;
  if (std::regex_match(value, var, kVarRef)) {
    for (const YAML::Node& env : worker.container["env"]) {
      from_index =
          from_index || (env["name"].as<std::string>("") == var[1].str() &&
                         At(env, {"valueFrom", "fieldRef", "fieldPath"}).as<std::string>("") ==
                             "metadata.annotations['batch.kubernetes.io/job-completion-index']");
    }
  }
  if (!from_index) {
    problems.push_back(absl::StrCat("k8s: worker --worker-index '", value,
                                    "' is not the Indexed Job's completion index"));
  }
}

// The coordinator's live metrics listen on all addresses, on a container
// port that a Service selecting it and the scrape annotations name.
void CheckMetrics(const K8sRole& coordinator, const std::vector<YAML::Node>& docs,
                  Problems& problems) {
  const std::string port = FlagValue(coordinator.role.args, "--metrics-port");
  bool container_port = false;
  for (const YAML::Node& p : coordinator.container["ports"]) {
    container_port = container_port || p["containerPort"].as<std::string>("") == port;
  }
  bool service_port = false;
  const YAML::Node labels = At(coordinator.workload, {"spec", "template", "metadata", "labels"});
  for (const YAML::Node& doc : docs) {
    if (doc["kind"].as<std::string>("") != "Service" ||
        !IsSubset(At(doc, {"spec", "selector"}), labels)) {
      continue;
    }
    for (const YAML::Node& p : At(doc, {"spec", "ports"})) {
      service_port = service_port || p["port"].as<std::string>("") == port;
    }
  }
  const YAML::Node annotations =
      At(coordinator.workload, {"spec", "template", "metadata", "annotations"});
  if (port.empty() || port == "0" ||
      FlagValue(coordinator.role.args, "--metrics-host") != "0.0.0.0" || !container_port ||
      !service_port || At(annotations, {"prometheus.io/port"}).as<std::string>("") != port) {
    problems.push_back(absl::StrCat(
        "k8s: the coordinator's metrics (--metrics-port '", port,
        "') are not reachable: need --metrics-host 0.0.0.0, a containerPort, a Service port and "
        "the prometheus.io/port annotation"));
  }
}

// Both Jobs: bounded in time, removed after a while, and a stop grace that
// fits the coordinator's drain and the worker's goodbye (about 7 s).
void CheckJobLimits(const K8sRole& role, const std::string& name, Problems& problems) {
  const YAML::Node spec = role.workload["spec"];
  if (spec["activeDeadlineSeconds"].as<int>(0) <= 0 || !spec["ttlSecondsAfterFinished"]) {
    problems.push_back(absl::StrCat("k8s: the ", name,
                                    " Job lacks activeDeadlineSeconds or ttlSecondsAfterFinished"));
  }
  if (role.pod_spec["terminationGracePeriodSeconds"].as<int>(0) < 10) {
    problems.push_back(
        absl::StrCat("k8s: the ", name, " pods' terminationGracePeriodSeconds is under 10 s"));
  }
}

Problems CheckK8sOperations(const std::vector<YAML::Node>& docs) {
  Problems problems;
  const auto roles = K8sRoles(docs);
  for (const char* role : {"sim-server", "coordinator", "worker"}) {
    if (roles.count(role) == 0) return {absl::StrCat("k8s: no container runs ", role)};
  }
  CheckReadiness(roles.at("sim-server"), problems);
  CheckSpread(roles.at("worker"), problems);
  CheckWorkerIndex(roles.at("worker"), problems);
  CheckMetrics(roles.at("coordinator"), docs, problems);
  CheckJobLimits(roles.at("coordinator"), "coordinator", problems);
  CheckJobLimits(roles.at("worker"), "worker", problems);
  return problems;
}

// ---- compose and Kubernetes agree ----

// The arguments without `--worker-index VALUE`: only Kubernetes numbers its
// workers (compose's replicas cannot be told apart in their arguments).
std::vector<std::string> WithoutWorkerIndex(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--worker-index") {
      ++i;
      continue;
    }
    out.push_back(args[i]);
  }
  return out;
}

Problems CheckAgreement(const YAML::Node& compose, const std::vector<YAML::Node>& docs) {
  Problems problems;
  const auto compose_roles = ComposeRoles(compose);
  const auto k8s_roles = K8sRoles(docs);
  for (const auto& [name, role] : compose_roles) {
    const auto k8s = k8s_roles.find(name);
    if (k8s == k8s_roles.end()) {
      problems.push_back(absl::StrCat(name, ": in compose, not in k8s"));
      continue;
    }
    if (k8s->second.role.image != role.image) {
      problems.push_back(absl::StrCat(name, ": image '", role.image, "' (compose) vs '",
                                      k8s->second.role.image, "' (k8s)"));
    }
    const std::vector<std::string> k8s_args = WithoutWorkerIndex(k8s->second.role.args);
    if (k8s_args != role.args) {
      problems.push_back(
          absl::StrCat(name, ": arguments differ:\n  compose: ", absl::StrJoin(role.args, " "),
                       "\n  k8s:     ", absl::StrJoin(k8s_args, " ")));
    }
  }
  return problems;
}

// ---- flags exist ----

std::string HelpOf(const std::string& command) {
  const std::string cmd = std::string(SURGE_BINARY_DIR) + "/surge " + command + " --help 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string output;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) output.append(buf.data(), n);
  pclose(pipe);
  return output;
}

// Every `--flag` of every role must appear in its command's help text.
Problems CheckFlags(const std::vector<Role>& roles,
                    const std::map<std::string, std::string>& help_by_command) {
  Problems problems;
  for (const Role& role : roles) {
    const auto help = help_by_command.find(role.args.at(0));
    if (help == help_by_command.end()) {
      problems.push_back(absl::StrCat("unknown command '", role.args[0], "'"));
      continue;
    }
    static const std::regex kFlag(R"(^--[a-z0-9-]+$)");
    for (const std::string& arg : role.args) {
      if (!std::regex_match(arg, kFlag)) continue;
      const std::regex in_help("(^|[\\s,])" + arg + "([\\s,=]|$)");
      if (!std::regex_search(help->second, in_help)) {
        problems.push_back(absl::StrCat("surge ", role.args[0], " has no flag ", arg));
      }
    }
  }
  return problems;
}

// ---- fixtures ----

struct Deploy {
  YAML::Node compose;
  std::vector<YAML::Node> k8s;
};

Deploy LoadDeploy() {
  Deploy deploy;
  deploy.compose = YAML::LoadFile((kDeploy / "docker-compose.yml").string());
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kDeploy / "k8s")) {
    if (entry.is_regular_file()) files.push_back(entry.path());  // not extras/
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    for (const YAML::Node& doc : YAML::LoadAllFromFile(file.string())) {
      if (doc.IsMap()) deploy.k8s.push_back(doc);
    }
  }
  return deploy;
}

std::vector<YAML::Node> CloneAll(const std::vector<YAML::Node>& docs) {
  std::vector<YAML::Node> out;
  for (const YAML::Node& doc : docs) out.push_back(YAML::Clone(doc));
  return out;
}

// The first manifest whose containers run `command`.
YAML::Node Workload(std::vector<YAML::Node>& docs, const std::string& command) {
  for (YAML::Node& doc : docs) {
    YAML::Node containers = At(doc, {"spec", "template", "spec", "containers"});
    if (containers && containers[0]["args"][0].as<std::string>() == command) return doc;
  }
  ADD_FAILURE() << "no workload runs " << command;
  return YAML::Node();
}

TEST(DeployManifestsTest, EveryYamlFileInDeployParses) {
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kDeploy)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".yml" && ext != ".yaml") continue;
    if (entry.path().string().find("/keys/") != std::string::npos ||
        entry.path().string().find("/results/") != std::string::npos) {
      continue;
    }
    EXPECT_NO_THROW(YAML::LoadAllFromFile(entry.path().string())) << entry.path();
    ++files;
  }
  // docker-compose.yml, 4 manifests in k8s/, the results reader, 4 example
  // configs.
  EXPECT_GE(files, 10);
}

TEST(DeployManifestsTest, ComposeHasTheRequiredFields) {
  const Deploy deploy = LoadDeploy();
  EXPECT_THAT(CheckCompose(deploy.compose), ::testing::IsEmpty());
  const auto roles = ComposeRoles(deploy.compose);
  EXPECT_EQ(roles.at("coordinator").image, "surge:latest");
  // The default run: 2 workers, 200 requests at 50 RPS, results in /results.
  EXPECT_EQ(FlagValue(roles.at("coordinator").args, "--expect-workers"), "2");
  EXPECT_EQ(FlagValue(roles.at("coordinator").args, "--output-dir"), "/results");
  EXPECT_EQ(FlagValue(roles.at("sim-server").args, "--host"), "0.0.0.0");
}

TEST(DeployManifestsTest, KubernetesManifestsHaveTheRequiredFields) {
  const Deploy deploy = LoadDeploy();
  ASSERT_EQ(deploy.k8s.size(), 6u);  // 2 Services, 2 Jobs, 1 Deployment, 1 PVC
  EXPECT_THAT(CheckK8s(deploy.k8s), ::testing::IsEmpty());
  EXPECT_THAT(CheckK8sOperations(deploy.k8s), ::testing::IsEmpty());
}

// The run folders outlive the Jobs: the claim has a file of its own that
// docs/DEPLOY.md's delete command leaves alone, and the results reader (not
// in deploy/k8s/ itself, so `kubectl apply -f deploy/k8s/` does not start
// it) mounts that claim read-only as the image's user.
TEST(DeployManifestsTest, ResultsOutliveTheJobsAndCanBeCopiedOut) {
  const std::vector<YAML::Node> pvc =
      YAML::LoadAllFromFile((kDeploy / "k8s" / "results-pvc.yaml").string());
  ASSERT_EQ(pvc.size(), 1u);
  EXPECT_EQ(Name(pvc[0]), "PersistentVolumeClaim/surge-results");
  const std::string deploy_md = Slurp(fs::path(SURGE_SOURCE_DIR) / "docs" / "DEPLOY.md");
  std::stringstream lines(deploy_md);
  int deletes = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!absl::StrContains(line, "kubectl delete -f")) continue;
    ++deletes;
    EXPECT_THAT(line, ::testing::Not(HasSubstr("results-pvc.yaml"))) << line;
    EXPECT_THAT(line, ::testing::Not(::testing::ContainsRegex("deploy/k8s/?( |$|`)"))) << line;
  }
  EXPECT_GE(deletes, 1);
  const YAML::Node reader =
      YAML::LoadFile((kDeploy / "k8s" / "extras" / "results-reader.yaml").string());
  EXPECT_EQ(Name(reader), "Pod/surge-results-reader");
  EXPECT_EQ(At(reader, {"spec", "securityContext", "runAsUser"}).as<int>(-1), kImageUid);
  EXPECT_EQ(
      At(reader, {"spec", "volumes"})[0]["persistentVolumeClaim"]["claimName"].as<std::string>(""),
      "surge-results");
  EXPECT_TRUE(At(reader, {"spec", "containers"})[0]["volumeMounts"][0]["readOnly"].as<bool>(false));
  EXPECT_GT(At(reader, {"spec", "activeDeadlineSeconds"}).as<int>(0), 0);
  EXPECT_THAT(deploy_md, HasSubstr("kubectl cp surge-results-reader:/results"));
}

TEST(DeployManifestsTest, ComposeAndKubernetesRunTheSameImageAndArguments) {
  const Deploy deploy = LoadDeploy();
  EXPECT_THAT(CheckAgreement(deploy.compose, deploy.k8s), ::testing::IsEmpty());
}

TEST(DeployManifestsTest, EveryFlagExistsInTheBuiltBinary) {
  const Deploy deploy = LoadDeploy();
  std::map<std::string, std::string> help;
  for (const char* command : {"coordinator", "worker", "sim-server"}) {
    help[command] = HelpOf(command);
    ASSERT_THAT(help[command], HasSubstr("--help")) << command;
  }
  std::vector<Role> roles;
  for (const auto& [name, role] : ComposeRoles(deploy.compose)) roles.push_back(role);
  for (const auto& [name, k8s] : K8sRoles(deploy.k8s)) roles.push_back(k8s.role);
  ASSERT_EQ(roles.size(), 6u);
  EXPECT_THAT(CheckFlags(roles, help), ::testing::IsEmpty());
  // The check itself: a misspelt flag and a flag of another command fail.
  roles.push_back(Role{"surge:latest", {"worker", "--conect", "tcp://x:1"}});
  roles.push_back(Role{"surge:latest", {"sim-server", "--expect-workers", "2"}});
  EXPECT_THAT(CheckFlags(roles, help),
              ::testing::ElementsAre("surge worker has no flag --conect",
                                     "surge sim-server has no flag --expect-workers"));
}

TEST(DeployManifestsTest, DockerfileIsMultiStageNonRootWithABaseArgument) {
  const std::string dockerfile = Slurp(kDeploy / "Dockerfile");
  EXPECT_THAT(dockerfile, HasSubstr("\nARG BASE=debian:12\n"));
  EXPECT_THAT(dockerfile, HasSubstr("\nFROM ${BASE} AS build\n"));
  EXPECT_THAT(dockerfile, HasSubstr("\nFROM ${BASE} AS runtime\n"));
  EXPECT_THAT(dockerfile, HasSubstr("scripts/install_deps.sh --build-only"));
  EXPECT_THAT(dockerfile, HasSubstr("--uid " + std::to_string(kImageUid)));
  EXPECT_THAT(dockerfile, HasSubstr("\nUSER surge\n"));
  EXPECT_THAT(dockerfile, HasSubstr("\nENTRYPOINT [\"surge\"]\n"));
}

// The image's smoke check (`RUN surge --version` in deploy/Dockerfile) needs
// --version to print the version and exit 0, not to fail as a parse error.
TEST(DeployManifestsTest, VersionFlagPrintsTheVersionAndExitsZero) {
  const std::string cmd = std::string(SURGE_BINARY_DIR) + "/surge --version 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::array<char, 256> buf{};
  const size_t n = fread(buf.data(), 1, buf.size() - 1, pipe);
  const int status = pclose(pipe);
  EXPECT_THAT(std::string(buf.data(), n),
              ::testing::MatchesRegex("surge [0-9]+\\.[0-9]+\\.[0-9]+\n"));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The checks fail on broken copies, naming what is wrong.
TEST(DeployManifestsTest, BrokenCopiesAreReported) {
  const Deploy deploy = LoadDeploy();
  {
    auto docs = CloneAll(deploy.k8s);
    Workload(docs, "worker")["spec"]["completionMode"] = "NonIndexed";
    EXPECT_THAT(CheckK8s(docs), ::testing::Contains(HasSubstr("not an Indexed Job")));
  }
  {
    auto docs = CloneAll(deploy.k8s);
    Workload(docs, "worker")["spec"]["completions"] = 3;
    EXPECT_THAT(CheckK8s(docs), ::testing::Contains(HasSubstr("differ from --expect-workers '2'")));
  }
  {
    auto docs = CloneAll(deploy.k8s);
    Workload(docs, "sim-server")["spec"]["template"]["spec"]["containers"][0].remove("resources");
    EXPECT_THAT(CheckK8s(docs),
                ::testing::Contains(HasSubstr("container sim-server lacks resources.requests")));
  }
  {
    auto docs = CloneAll(deploy.k8s);
    Workload(
        docs,
        "sim-server")["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] =
        "other";
    const Problems problems = CheckK8s(docs);
    EXPECT_THAT(problems, ::testing::Contains("k8s: Service/surge-sim selects no pods"));
    EXPECT_THAT(problems,
                ::testing::Contains("k8s: Deployment/surge-sim selector does not match its pods"));
  }
  {
    auto docs = CloneAll(deploy.k8s);
    YAML::Node volumes = Workload(docs, "worker")["spec"]["template"]["spec"]["volumes"];
    volumes[0]["secret"]["secretName"] = "elsewhere";
    EXPECT_THAT(CheckK8s(docs),
                ::testing::Contains("k8s: worker --curve-secret-key '/keys/worker.key' is not "
                                    "mounted from the Secret surge-keys"));
  }
  {
    auto docs = CloneAll(deploy.k8s);
    YAML::Node args =
        Workload(docs, "coordinator")["spec"]["template"]["spec"]["containers"][0]["args"];
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i].as<std::string>() == "--request-rate") args[i + 1] = "60";
    }
    Workload(docs, "worker")["spec"]["template"]["spec"]["containers"][0]["image"] = "surge:v2";
    const Problems problems = CheckAgreement(deploy.compose, docs);
    ASSERT_EQ(problems.size(), 2u);
    EXPECT_THAT(problems[0], HasSubstr("coordinator: arguments differ"));
    EXPECT_THAT(problems[0], HasSubstr("--request-rate 60"));
    EXPECT_EQ(problems[1], "worker: image 'surge:latest' (compose) vs 'surge:v2' (k8s)");
  }
  {
    auto docs = CloneAll(deploy.k8s);
    YAML::Node sim = Workload(docs, "sim-server")["spec"]["template"]["spec"]["containers"][0];
    sim["readinessProbe"]["httpGet"]["path"] = "/v1/models";
    YAML::Node worker = Workload(docs, "worker");
    worker["spec"]["template"]["spec"].remove("topologySpreadConstraints");
    worker["spec"]["template"]["spec"]["containers"][0]["env"][0]["valueFrom"]["fieldRef"]
          ["fieldPath"] = "metadata.name";
    worker["spec"].remove("ttlSecondsAfterFinished");
    YAML::Node coordinator = Workload(docs, "coordinator");
    coordinator["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 2;
    coordinator["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] = "9464";
    const Problems problems = CheckK8sOperations(docs);
    EXPECT_THAT(problems, ::testing::UnorderedElementsAre(
                              HasSubstr("no readinessProbe httpGet /health"),
                              HasSubstr("no topologySpreadConstraints"),
                              "k8s: worker --worker-index '$(WORKER_INDEX)' is not the Indexed "
                              "Job's completion index",
                              HasSubstr("metrics (--metrics-port '9090') are not reachable"),
                              "k8s: the worker Job lacks activeDeadlineSeconds or "
                              "ttlSecondsAfterFinished",
                              "k8s: the coordinator pods' terminationGracePeriodSeconds is under "
                              "10 s"));
  }
  {
    auto docs = CloneAll(deploy.k8s);
    YAML::Node volumes = Workload(docs, "coordinator")["spec"]["template"]["spec"]["volumes"];
    volumes[0]["secret"]["items"][2]["path"] = "other.key";
    EXPECT_THAT(CheckK8s(docs),
                ::testing::Contains("k8s: coordinator --api-key-file '/keys/api.key' is not "
                                    "mounted from the Secret surge-keys"));
  }
  {
    YAML::Node compose = YAML::Clone(deploy.compose);
    compose["services"]["worker"]["deploy"]["replicas"] = 3;
    compose["services"]["worker"]["volumes"][0] = "./keys:/keys";
    const Problems problems = CheckCompose(compose);
    EXPECT_THAT(problems,
                ::testing::Contains(HasSubstr("worker deploy.replicas '3' is not the coordinator's "
                                              "--expect-workers '${SURGE_WORKERS:-2}'")));
    EXPECT_THAT(problems, ::testing::Contains(
                              "compose: worker --curve-secret-key '/keys/worker.key' is not in a "
                              "read-only mounted folder"));
  }
}

}  // namespace
}  // namespace surge::testing
