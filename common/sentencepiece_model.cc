#include "common/sentencepiece_model.h"

#include <dlfcn.h>

#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/sentencepiece_module.h"

namespace surge {

// The module's functions.
struct SentencePieceApi {
  SurgeSpmLoadFn load = nullptr;
  SurgeSpmFreeFn free = nullptr;
  SurgeSpmEncodeFn encode = nullptr;
  SurgeSpmPieceSizeFn piece_size = nullptr;
};

namespace {

// Where the module is looked for, in order: next to the running executable,
// then where the build put it.
std::vector<std::string> ModuleCandidates() {
  std::vector<std::string> paths;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) paths.push_back((exe.parent_path() / SURGE_SENTENCEPIECE_MODULE_NAME).string());
#ifdef SURGE_SENTENCEPIECE_MODULE_PATH
  paths.push_back(SURGE_SENTENCEPIECE_MODULE_PATH);
#endif
  return paths;
}

// Opens the module once per process; the handle stays open.
absl::StatusOr<const SentencePieceApi*> OpenModule() {
  static const absl::StatusOr<const SentencePieceApi*>* api = [] {
    std::string tried;
    for (const std::string& path : ModuleCandidates()) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (handle == nullptr) {
        absl::StrAppend(&tried, tried.empty() ? "" : "; ", path, ": ", dlerror());
        continue;
      }
      auto* functions = new SentencePieceApi;
      functions->load = reinterpret_cast<SurgeSpmLoadFn>(dlsym(handle, "surge_spm_load"));
      functions->free = reinterpret_cast<SurgeSpmFreeFn>(dlsym(handle, "surge_spm_free"));
      functions->encode = reinterpret_cast<SurgeSpmEncodeFn>(dlsym(handle, "surge_spm_encode"));
      functions->piece_size =
          reinterpret_cast<SurgeSpmPieceSizeFn>(dlsym(handle, "surge_spm_piece_size"));
      if (functions->load && functions->free && functions->encode && functions->piece_size) {
        return new absl::StatusOr<const SentencePieceApi*>(functions);
      }
      absl::StrAppend(&tried, tried.empty() ? "" : "; ", path, ": not surge's module");
      delete functions;
    }
    return new absl::StatusOr<const SentencePieceApi*>(absl::FailedPreconditionError(
        absl::StrCat("cannot load surge's SentencePiece module (", tried, ")")));
  }();
  return *api;
}

void AppendIds(void* context, const int* ids, size_t count) {
  static_cast<std::vector<int>*>(context)->assign(ids, ids + count);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SentencePieceModel>> SentencePieceModel::Load(
    const std::string& path, std::string_view field_name) {
  const std::string field(field_name);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": no file '", path, "' (a SentencePiece .model file is expected)"));
  }
  absl::StatusOr<const SentencePieceApi*> api = OpenModule();
  if (!api.ok()) return absl::FailedPreconditionError(absl::StrCat(field, ": ", api.status().message()));
  char error[512] = {0};
  void* model = (*api)->load(path.c_str(), error, sizeof(error));
  if (model == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": '", path, "' is not a SentencePiece model (", error, ")"));
  }
  return std::unique_ptr<SentencePieceModel>(new SentencePieceModel(*api, model));
}

SentencePieceModel::~SentencePieceModel() { api_->free(model_); }

std::vector<int> SentencePieceModel::Encode(std::string_view text) const {
  std::vector<int> ids;
  api_->encode(model_, text.data(), text.size(), &AppendIds, &ids);
  return ids;
}

uint32_t SentencePieceModel::Count(std::string_view text) const {
  return static_cast<uint32_t>(Encode(text).size());
}

int SentencePieceModel::VocabularySize() const { return api_->piece_size(model_); }

}  // namespace surge
