#!/usr/bin/env bash
# End-to-end precision benchmark: surge's sends as seen on the wire.
#
#   bench/wire_precision.sh [options]        # from the repository root, as root (dumpcap)
#
# Loopback only, bounded. Starts nginx (Debian nginx-light, its own config in a mktemp folder,
# on 127.0.0.1:<free port>) answering surge's requests with a fixed one-token SSE stream,
# captures on `lo` with dumpcap (only SYNs to nginx and each request's first packet: TCP
# payload starting with "POST " or "GET ", snap length 512), and for each case runs
# `surge run` against it; tshark extracts each packet's time, TCP stream and payload, and
# bench/wire_analysis.py keeps only the scheduled sends -- POST to the /completions endpoint
# with surge's `X-Surge-Request: INDEX/ATTEMPT` header -- matches them to the run's details
# file, and prints, per case (connections: those that carried a scheduled send):
# sent/planned, achieved/target, wire lateness p50/p99/max and spread (p99 - p1), the new
# connections (SYNs) after the first second against the sends of that part, surge's own
# lateness p99 and the two-sample KS distance of wire gaps vs planned gaps (scipy.stats.ks_2samp),
# for random traffic the send floor (the median wire gap of one worker's sends planned < 5 us
# apart: one send(2)) and the KS of the gaps of at least twice it, each worker's CPU per sent
# request (pacer, I/O; its last log line), then the precision targets and the highest rate
# whose wire lateness p99 stays <= 1 ms.
# Requests that are not scheduled sends are dropped from every wire time and rate by their
# method and path, and counted per case ("off the wire times"): surge's pre-flight
# `GET /v1/models`, a `--tokenizer server` tokenize call, warm-ups.
# Last, the streaming case: `surge sim-server` in its own process pinned to one core
# (taskset), 1,000 RPS, 256 output tokens at 2 ms each.
#
# Cases: constant (burstiness 0), Poisson (1) and Gamma 0.5 traffic at 1,000, 5,000 and
# 20,000 RPS with 1 and 2 workers, plus the ladder rates (2 workers) for the highest rate with
# wire p99 <= 1 ms. Each case sends rate x --duration-s requests (default 4 s). A case whose
# generator falls behind (a worker's lateness p99 over a second above --alarm-ms, default
# 50 ms: every target is missed by then) is ended by surge's own --stop-on-alarm, its files
# written, and its row marked "stopped"; any case is cut (SIGTERM: surge stops sending and
# writes its files) after 2 x duration + 15 s.
#
# Options:
#   --surge PATH        surge binary (default: build/app/surge, else build/surge)
#   --duration-s S      seconds of traffic per case (default 4)
#   --rates "R ..."     rates of the grid (default "1000 5000 20000")
#   --workers "W ..."   worker counts of the grid (default "1 2")
#   --traffic "T ..."   of constant poisson gamma0.5 (default all three)
#   --ladder "R ..."    extra rates, 2 workers, for the highest rate with p99 <= 1 ms
#                       (default "2000 10000 15000"; "" for none)
#   --no-streaming      skip the streaming case;  --only-streaming: only it
#   --stream-rate R     streaming case rate (default 1000); --stream-tokens N (default 256)
#   --sim-cpu N         core the sim server is pinned to (default: the last one)
#   --input-len N       prompt tokens per request (default 64)
#   --tw-wait-s S       before each case, wait up to S s (default 30) for the host's TIME-WAIT
#                       sockets to drop under 2,000
#   --alarm-ms MS       --lateness-alarm-ms with --stop-on-alarm (default 50; 0: run every
#                       case to its end, however late)
#   --seed N            plan seed (default 1)
#   --run-args "ARGS"   extra arguments for every `surge run`, e.g. "--pacer-realtime"
#   --keep DIR          keep every run folder, capture and the rows in DIR
#   --install           first install the bench packages (scripts/install_deps.sh --bench)
#   --self-check        only check the analysis on a made-up run (wire_analysis.py selfcheck:
#                       a pre-flight GET, a tokenize call, a warm-up, a retry; the send floor
#                       and the KS above it); needs python3-scipy
#
# Needs: nginx (nginx-light), dumpcap and tshark (wireshark-common, tshark), python3 with
# scipy (python3-scipy), taskset (util-linux); root or CAP_NET_RAW for dumpcap. It installs
# nothing itself unless --install is given. Every process it starts (nginx, dumpcap, the sim
# server, surge) is stopped by its pid on exit or on a signal.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

SURGE=""
DURATION_S=4
RATES="1000 5000 20000"
WORKERS="1 2"
TRAFFIC="constant poisson gamma0.5"
LADDER="2000 10000 15000"
STREAMING=1
GRID=1
STREAM_RATE=1000
STREAM_TOKENS=256
SIM_CPU=""
INPUT_LEN=64
ALARM_MS=50
TW_WAIT_S=30
SEED=1
RUN_ARGS=""
KEEP=""
INSTALL=0
SELF_CHECK=0
usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --surge) SURGE=$2; shift 2 ;;
    --duration-s) DURATION_S=$2; shift 2 ;;
    --rates) RATES=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --traffic) TRAFFIC=$2; shift 2 ;;
    --ladder) LADDER=$2; shift 2 ;;
    --no-streaming) STREAMING=0; shift ;;
    --only-streaming) GRID=0; shift ;;
    --stream-rate) STREAM_RATE=$2; shift 2 ;;
    --stream-tokens) STREAM_TOKENS=$2; shift 2 ;;
    --sim-cpu) SIM_CPU=$2; shift 2 ;;
    --input-len) INPUT_LEN=$2; shift 2 ;;
    --alarm-ms) ALARM_MS=$2; shift 2 ;;
    --tw-wait-s) TW_WAIT_S=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --run-args) RUN_ARGS=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --install) INSTALL=1; shift ;;
    --self-check) SELF_CHECK=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "wire_precision: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for t in $TRAFFIC; do
  case "$t" in constant|poisson|gamma0.5) ;; *)
    echo "wire_precision: --traffic '$t': allowed constant, poisson, gamma0.5" >&2; exit 2 ;;
  esac
done

if [ "$INSTALL" -eq 1 ]; then scripts/install_deps.sh --build-only --bench; fi

PY=/usr/bin/python3  # Debian's, which has python3-scipy
if [ "$SELF_CHECK" -eq 1 ]; then
  if ! "$PY" -c 'import scipy.stats, numpy' 2>/dev/null; then
    echo "wire_precision: --self-check needs python3-scipy (scripts/install_deps.sh --bench)" >&2
    exit 2
  fi
  exec "$PY" bench/wire_analysis.py selfcheck
fi
missing=()
command -v nginx >/dev/null || missing+=("nginx (nginx-light)")
command -v dumpcap >/dev/null || missing+=("dumpcap (wireshark-common)")
command -v tshark >/dev/null || missing+=("tshark")
command -v taskset >/dev/null || missing+=("taskset (util-linux)")
command -v ss >/dev/null || missing+=("ss (iproute2)")
"$PY" -c 'import scipy.stats, numpy' 2>/dev/null || missing+=("python3-scipy")
if [ ${#missing[@]} -gt 0 ]; then
  echo "wire_precision: missing ${missing[*]}; install with scripts/install_deps.sh --bench" \
       "(or give --install)" >&2
  exit 2
fi
if [ -z "$SURGE" ]; then
  for c in build/app/surge build/surge; do [ -x "$c" ] && SURGE=$c && break; done
fi
if [ -z "$SURGE" ] || [ ! -x "$SURGE" ]; then
  echo "wire_precision: no surge binary (build it, or give --surge PATH)" >&2; exit 2
fi
SURGE=$(readlink -f "$SURGE")
NCPU=$(nproc)
if [ -z "$SIM_CPU" ]; then SIM_CPU=$((NCPU - 1)); fi

WORK=$(mktemp -d /tmp/surge_wire.XXXXXX)
PIDS=()  # everything started in the background, stopped by pid in cleanup
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local p
  for p in "${PIDS[@]}"; do
    if kill -0 "$p" 2>/dev/null; then kill -TERM "$p" 2>/dev/null || true; fi
  done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP" && cp -a "$WORK"/. "$KEEP"/ && echo "wire_precision: kept in $KEEP"
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
forget_pid() {  # drop a pid that has been waited for
  local keep=() p
  for p in "${PIDS[@]}"; do [ "$p" != "$1" ] && keep+=("$p"); done
  PIDS=("${keep[@]+"${keep[@]}"}")
}
free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_port() {  # port, seconds
  local i
  for ((i = 0; i < $2 * 20; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  return 1
}
load_now() { cut -d' ' -f1 /proc/loadavg; }

# --- nginx: a fixed OpenAI-compatible answer on 127.0.0.1:$NGINX_PORT ---
NGINX_PORT=$(free_port)
NG=$WORK/nginx
mkdir -p "$NG"
# /v1/models for surge's pre-flight and model lookup; every other /v1/ path (surge POSTs
# /v1/chat/completions with "stream": true) gets one content event, a finish event with
# usage, and [DONE], as text/event-stream with a Content-Length (keep-alive).
cat > "$NG/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $NG/nginx.pid;
error_log $NG/error.log warn;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path $NG/body;
  proxy_temp_path $NG/proxy;
  fastcgi_temp_path $NG/fastcgi;
  uwsgi_temp_path $NG/uwsgi;
  scgi_temp_path $NG/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  server {
    listen 127.0.0.1:$NGINX_PORT backlog=4096;
    location = /v1/models {
      default_type application/json;
      return 200 '{"object":"list","data":[{"id":"nginx-static","object":"model"}]}';
    }
    location /v1/ {
      default_type text/event-stream;
      return 200 'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\ndata: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":$INPUT_LEN,"completion_tokens":1}}\n\ndata: [DONE]\n\n';
    }
  }
}
EOF

ROWS=$WORK/rows.jsonl
: > "$ROWS"

beta_of() {
  case "$1" in constant) echo 0 ;; poisson) echo 1 ;; gamma0.5) echo 0.5 ;; streaming) echo 0 ;; esac
}

# run_case LABEL TRAFFIC RATE WORKERS PORT [extra surge args...]
run_case() {
  local label=$1 traffic=$2 rate=$3 workers=$4 port=$5 i
  shift 5
  local n=$((rate * DURATION_S))
  local dir=$WORK/$label
  mkdir -p "$dir"
  local cut_s=$((2 * DURATION_S + 15))
  local alarm=(--lateness-alarm-ms "$ALARM_MS")
  if [ "$ALARM_MS" != 0 ]; then alarm+=(--stop-on-alarm); fi
  # Only each connection's SYN (to count the connections opened) and each request's first
  # packet (to the server's port, TCP payload starting "POST" or "GET "; the analysis keeps
  # the scheduled sends and counts the rest). The SYN test comes first: the payload test reads
  # past the end of a SYN, which rejects the packet in BPF.
  local filter="tcp dst port $port and ((tcp[tcpflags] & (tcp-syn|tcp-ack)) = tcp-syn"
  filter+=" or tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x504f5354"
  filter+=" or tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x47455420)"
  # TIME-WAIT sockets left by the previous case make connect(2)'s port search expensive
  # (docs/PERFORMANCE.md): wait, bounded, until fewer than 2,000 remain.
  local tw
  for ((i = 0; i < TW_WAIT_S * 2; i++)); do
    tw=$(ss -tan state time-wait | tail -n +2 | wc -l)
    [ "$tw" -lt 2000 ] && break
    sleep 0.5
  done
  tw=$(ss -tan state time-wait | tail -n +2 | wc -l)
  dumpcap -i lo -f "$filter" -s 512 -B 64 -a "duration:$((cut_s + 10))" \
    -w "$dir/wire.pcapng" > "$dir/dumpcap.log" 2>&1 &
  local cap=$!
  PIDS+=("$cap")
  for ((i = 0; i < 100; i++)); do
    grep -q "^Capturing on" "$dir/dumpcap.log" 2>/dev/null && break
    kill -0 "$cap" 2>/dev/null || break
    sleep 0.05
  done
  if ! grep -q "^Capturing on" "$dir/dumpcap.log"; then
    echo "wire_precision: dumpcap did not start:" >&2; cat "$dir/dumpcap.log" >&2; exit 1
  fi
  local load
  load=$(load_now)
  echo "== $label: $traffic, $rate RPS, $workers worker(s), $n requests (load $load, TIME-WAIT sockets $tw)" >&2
  local rc=0
  timeout -s TERM -k 20 "$cut_s" "$SURGE" run --base-url "http://127.0.0.1:$port" \
    --num-prompts "$n" --request-rate "$rate" --burstiness "$(beta_of "$traffic")" \
    --workers "$workers" --random-input-len "$INPUT_LEN" --seed "$SEED" \
    --output-dir "$dir/out" "${alarm[@]}" $RUN_ARGS "$@" > "$dir/surge.log" 2>&1 &
  local run=$!
  PIDS+=("$run")
  wait "$run" || rc=$?
  forget_pid "$run"
  kill -TERM "$cap" 2>/dev/null || true
  wait "$cap" || true
  forget_pid "$cap"
  local folder
  folder=$(sed -n 's/^results: //p' "$dir/surge.log" | tail -1)
  local stopped=""
  if [ "$rc" -eq 3 ]; then
    stopped=$(grep -m1 "stopping the run (--stop-on-alarm)" "$dir/surge.log" | sed 's/.*(--stop-on-alarm): //; s/;.*//')
    echo "  stopped by surge: $stopped" >&2
  elif [ "$rc" -ne 0 ] || [ -z "$folder" ]; then
    echo "wire_precision: $label: surge exited $rc; its output:" >&2
    tail -20 "$dir/surge.log" >&2
    if [ -z "$folder" ]; then return 0; fi
  fi
  case "$folder" in /*) ;; *) folder=$REPO/$folder ;; esac
  grep -E "Packets received/dropped|dropped" "$dir/dumpcap.log" | sed 's/^/  dumpcap: /' >&2 || true
  # Each worker's last line: CPU per sent request on its pacer and I/O threads, its connections.
  grep -h "cost per sent request" "$dir/surge.log" | sed 's/^\[worker \([0-9]*\)\] INFO /  worker \1 /' >&2 || true
  tshark -r "$dir/wire.pcapng" -n -o tcp.desegment_tcp_streams:FALSE \
    -T fields -e frame.time_epoch -e tcp.stream -e tcp.payload > "$dir/wire.tsv" 2> "$dir/tshark.log"
  local details summary
  details=$(find "$folder" -maxdepth 1 -name '*_details.jsonl' | head -1)
  summary=${details%_details.jsonl}.json
  "$PY" bench/wire_analysis.py scenario --details "$details" --summary "$summary" \
    --wire "$dir/wire.tsv" --label "$label" --traffic "$traffic" --rate "$rate" \
    --workers "$workers" --load "$load" --stopped "$stopped" --time-wait "$tw" | tee -a "$ROWS" | "$PY" -c '
import json, sys
r = json.loads(sys.stdin.read())
if "error" in r:
    print("  " + r["error"], file=sys.stderr)
else:
    print("  conns %d  achieved/target %.4f  wire p50 %.3f p99 %.3f max %.2f spread %.3f ms  own p99 %.3f ms"
          "  KS %.4f (crit %.4f)" % (r["connections_opened"], r["achieved_over_target"], r["wire_p50_ms"], r["wire_p99_ms"],
          r["wire_max_ms"], r["wire_spread_ms"], r["own_p99_ms"], r["ks_d"], r["ks_crit"]),
          file=sys.stderr)
    if r.get("send_floor_us") is not None and r["traffic"] != "constant":
        line = "  send floor %.1f us (%d pairs planned < 5 us apart)" % (r["send_floor_us"], r["send_floor_pairs"])
        if "ks_above_floor_d" in r:
            line += "; KS of gaps >= 2x floor D %.4f (crit %.4f, p %.3g, %d gaps) %s" % (
                r["ks_above_floor_d"], r["ks_above_floor_crit"], r["ks_above_floor_p"],
                r["ks_above_floor_n"], "pass" if r["ks_above_floor_pass"] else "FAIL")
        print(line, file=sys.stderr)
    if r.get("sends_after_1s"):
        print("  new connections after the first second: %d for %d sends (%.2f %%)" % (
              r["new_connections_after_1s"], r["sends_after_1s"], r["new_connections_after_1s_pct"]),
              file=sys.stderr)
off = dict(r.get("wire_excluded", {}))
if r.get("wire_warmups"):
    off["warm-ups"] = r["wire_warmups"]
if off:
    print("  off the wire times: " + ", ".join("%s %d" % kv for kv in off.items()), file=sys.stderr)'
  if [ -z "$KEEP" ]; then rm -f "$dir/wire.pcapng"; fi
}

echo "wire_precision: surge $SURGE, $NCPU cores, duration ${DURATION_S} s per case, work $WORK" >&2
if [ "$GRID" -eq 1 ]; then
  nginx -p "$NG" -c "$NG/nginx.conf" -e "$NG/error.log" &
  NGINX_PID=$!
  PIDS+=("$NGINX_PID")
  wait_port "$NGINX_PORT" 10 || { echo "wire_precision: nginx did not start" >&2; cat "$NG/error.log" >&2; exit 1; }
  echo "nginx on 127.0.0.1:$NGINX_PORT (pid $NGINX_PID)" >&2
  for workers in $WORKERS; do
    for traffic in $TRAFFIC; do
      for rate in $RATES; do
        run_case "nginx_${traffic}_${rate}_w${workers}" "$traffic" "$rate" "$workers" "$NGINX_PORT"
      done
    done
  done
  for traffic in $TRAFFIC; do
    for rate in $LADDER; do
      # already run by the grid?
      if [[ " $RATES " == *" $rate "* && " $WORKERS " == *" 2 "* ]]; then continue; fi
      run_case "nginx_${traffic}_${rate}_w2" "$traffic" "$rate" 2 "$NGINX_PORT"
    done
  done
  kill -TERM "$NGINX_PID" 2>/dev/null || true
  wait "$NGINX_PID" 2>/dev/null || true
  forget_pid "$NGINX_PID"
fi

if [ "$STREAMING" -eq 1 ]; then
  SIM_PORT=$(free_port)
  taskset -c "$SIM_CPU" "$SURGE" sim-server --host 127.0.0.1 --port "$SIM_PORT" \
    --ttft-ms 20 --itl-ms 2 > "$WORK/sim.log" 2>&1 &
  SIM_PID=$!
  PIDS+=("$SIM_PID")
  wait_port "$SIM_PORT" 10 || { echo "wire_precision: sim server did not start" >&2; cat "$WORK/sim.log" >&2; exit 1; }
  echo "sim server on 127.0.0.1:$SIM_PORT (pid $SIM_PID, core $SIM_CPU)" >&2
  run_case "sim_streaming_${STREAM_RATE}_w2" streaming "$STREAM_RATE" 2 "$SIM_PORT" \
    --random-output-len "$STREAM_TOKENS"
  kill -TERM "$SIM_PID" 2>/dev/null || true
  wait "$SIM_PID" 2>/dev/null || true
  forget_pid "$SIM_PID"
fi

echo
"$PY" bench/wire_analysis.py table "$ROWS"
