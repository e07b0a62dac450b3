#!/usr/bin/env bash
# The sluice developer entry point. Every command first sets up what it needs
# (idempotent; quick when everything is already there).
#
#   ./dev.sh demo    run the main job end to end on the embedded default
#   ./dev.sh test    run the whole test suite (what CI runs): every test
#                    binary, even after a failure, then one summary of what failed;
#                    then the Python package's wheel and its pytest suite
#   ./dev.sh stress-test  the kernel-facing suites with stress-ng loading
#                    every core (tests must hold on a busy machine)
#   ./dev.sh setup   only install the system packages and the Rust toolchain
#   ./dev.sh python  build the Python package's wheel, install it, run its tests
#   ./dev.sh bench   run the benchmarks (`./dev.sh bench python`: the Python package's only)
#   ./dev.sh fuzz    run every fuzz target briefly (needs the nightly toolchain)
#   ./dev.sh sanitize  the maps and hooks shared by worker threads under ThreadSanitizer,
#                    then the maps crate and the VM's memory regions under Miri
#                    (nightly; exits non-zero on a data race or undefined behaviour)
set -euo pipefail
cd "$(dirname "$0")"

# Debian 12 packages: a C toolchain for Rust's linker, clang/LLVM 19 (and 14)
# to build eBPF programs, libbpf/libelf/zlib for the kernel backend, libpcap
# for capture filters, bpftool and iproute2 for kernel tests, libxdp for the
# AF_XDP benchmark's baseline, util-linux's setpriv for unprivileged checks,
# nfdump (nfcapd) and tshark to check the IPFIX exporter against real collectors,
# python3 for the live RTT test's TCP peers and the xPF RTT program's generator.
# openvswitch-common for ovs-ofctl, the OpenFlow client the switch is tested with,
# and openvswitch-switch for Open vSwitch itself, which the tests run in sandboxes
# of their own on its dummy datapath to compare with (its system service is not
# started: no package service is, see setup_apt);
# python3-venv for os-ken, the controller it is tested with; iputils-ping and
# ethtool for the hosts of the switch's namespace tests; stress-ng to load
# the cores under `./dev.sh stress-test`; lcov for genhtml, which draws the
# coverage `sluice run --coverage` writes (its tests run it).
APT_PACKAGES=(
    build-essential pkg-config curl ca-certificates git
    clang-19 llvm-19 clang-14
    libbpf-dev libelf-dev zlib1g-dev libpcap-dev libxdp-dev
    bpftool iproute2 procps tcpdump unzip util-linux
    nfdump tshark python3 python3-venv openvswitch-common openvswitch-switch iputils-ping ethtool
    fonts-dejavu-core stress-ng lcov
)
RUST_TOOLCHAIN=1.95.0

say() { printf '[dev.sh] %s\n' "$*" >&2; }

setup_apt() {
    local missing=()
    for p in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    say "installing Debian packages: ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    # Packages' services (Open vSwitch's switch, nfdump's collector) are not
    # started: the tests start what they compare with themselves.
    local policy=/usr/sbin/policy-rc.d made=0 status=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
        "${sudo[@]}" chmod +x "$policy"
        made=1
    fi
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" || status=$?
    [ "$made" = 0 ] || "${sudo[@]}" rm -f "$policy"
    return "$status"
}

setup_rust() {
    if ! command -v rustup >/dev/null 2>&1; then
        if [ -x "$HOME/.cargo/bin/rustup" ]; then
            export PATH="$HOME/.cargo/bin:$PATH"
        else
            say "installing rustup and Rust $RUST_TOOLCHAIN"
            curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
                sh -s -- -y --profile minimal --default-toolchain none
            export PATH="$HOME/.cargo/bin:$PATH"
        fi
    fi
    # rust-toolchain.toml pins the version; make sure it and its components exist.
    if ! rustup run "$RUST_TOOLCHAIN" cargo clippy --version >/dev/null 2>&1 ||
        ! rustup run "$RUST_TOOLCHAIN" cargo fmt --version >/dev/null 2>&1; then
        say "installing Rust $RUST_TOOLCHAIN with rustfmt and clippy"
        rustup toolchain install "$RUST_TOOLCHAIN" --profile minimal --component rustfmt clippy
    fi
}

# Third-party XDP programs for the tests: the BPF objects of Debian's
# xdp-tools packages (built from xdp-tools' sources with clang), kept in
# target/thirdparty, never in git.
THIRDPARTY=target/thirdparty
setup_thirdparty() {
    local marker="$THIRDPARTY/.xdp-tools-1.3.1"
    [ -f "$marker" ] && return 0
    say "fetching third-party XDP programs (Debian xdp-tools, libxdp1)"
    mkdir -p "$THIRDPARTY/debs"
    (cd "$THIRDPARTY/debs" && apt-get download xdp-tools libxdp1 >/dev/null 2>&1) ||
        { say "apt-get download xdp-tools libxdp1 failed"; return 1; }
    for d in "$THIRDPARTY"/debs/*.deb; do
        dpkg-deb -x "$d" "$THIRDPARTY/root"
    done
    touch "$marker"
}

# Third-party program sources, fetched as Go modules with `go mod download`
# (which honours GOPROXY and checks the checksum database): Cilium's
# datapath and cilium/ebpf's examples. The tests build them with clang.
# Each entry: module, version, sha256 of the module zip, folder we use.
GO_MODULES=(
    "github.com/cilium/cilium v1.20.2 8876f17c696b7bd0e629708df542ca2ec0c3bf5b158fafac5ebd9c250223d50f bpf"
    "github.com/cilium/ebpf v0.20.0 1cef597f00c7bb8b4678b9209793bac31c363a412c9382ab9e307ea1e150a994 examples"
)

setup_go() {
    command -v go >/dev/null 2>&1 && return 0
    [ -x /usr/local/go/bin/go ] && { export PATH="/usr/local/go/bin:$PATH"; return 0; }
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    say "installing Debian's golang-go (for go mod download)"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends golang-go
}

setup_sources() {
    local entry mod ver sum dir zip json
    mkdir -p "$THIRDPARTY/src"
    for entry in "${GO_MODULES[@]}"; do
        read -r mod ver sum dir <<<"$entry"
        [ -d "$THIRDPARTY/src/$mod@$ver/$dir" ] && continue
        setup_go
        say "fetching $mod $ver ($dir/) with go mod download"
        # A module cache of our own, writable so that `rm -rf target` works.
        json=$(cd "$THIRDPARTY" && GOMODCACHE="$PWD/gomod" GOFLAGS=-modcacherw \
            go mod download -json "$mod@$ver") ||
            { say "go mod download $mod@$ver failed"; return 1; }
        zip=$(sed -n 's/^[[:space:]]*"Zip": "\(.*\)",$/\1/p' <<<"$json")
        echo "$sum  $zip" | sha256sum -c --quiet - ||
            { say "checksum mismatch for $mod $ver"; return 1; }
        unzip -q -o "$zip" "$mod@$ver/$dir/*" -d "$THIRDPARTY/src"
    done
}

# os-ken, the OpenFlow controller of the switch's tests, from PyPI in a venv of
# our own: the versions of tools/osken-requirements.txt (os-ken 3.1.1, the
# last release with `osken-manager`) and its L2 learning switch app,
# simple_switch_13.py, from os-ken 1.4.1 (the last release with the apps).
OSKEN=$THIRDPARTY/osken
setup_osken() {
    [ -x "$OSKEN/bin/osken-manager" ] && [ -f "$OSKEN/apps/simple_switch_13.py" ] &&
        cmp -s tools/osken-requirements.txt "$OSKEN/requirements.txt" && return 0
    say "installing os-ken 3.1.1 with pip (into $OSKEN)"
    rm -rf "$OSKEN"
    python3 -m venv "$OSKEN"
    "$OSKEN/bin/pip" install -q --disable-pip-version-check -r tools/osken-requirements.txt
    "$OSKEN/bin/pip" download -q --disable-pip-version-check --no-deps os-ken==1.4.1 -d "$OSKEN/dl"
    mkdir -p "$OSKEN/apps"
    unzip -q -o -j "$OSKEN/dl/os_ken-1.4.1-py3-none-any.whl" os_ken/app/simple_switch_13.py -d "$OSKEN/apps"
    cp tools/osken-requirements.txt "$OSKEN/requirements.txt"
}

# The Python package (python/, docs/python.md): its build and test tools
# from PyPI in a venv of our own, the versions of
# tools/python-requirements.txt (maturin, pyarrow, pandas, pytest).
PYVENV=target/python-venv
setup_python() {
    [ -x "$PYVENV/bin/maturin" ] && cmp -s tools/python-requirements.txt "$PYVENV/requirements.txt" && return 0
    say "installing the Python package's tools with pip (into $PYVENV)"
    rm -rf "$PYVENV"
    python3 -m venv "$PYVENV"
    "$PYVENV/bin/pip" install -q --disable-pip-version-check -r tools/python-requirements.txt
    cp tools/python-requirements.txt "$PYVENV/requirements.txt"
}

# Builds the `sluice` wheel from the checkout with maturin (the dev profile:
# the engine's crates are already built by the test run, and the ones on
# the packet path are optimised even there), installs it into the venv and
# runs python/tests/ with pytest: against the example objects, the shared
# captures and this build's `sluice` binary (for `sluice run --json`).
test_python() {
    local t0=$SECONDS target=${CARGO_TARGET_DIR:-$PWD/target} wheel rc=0
    # Called where a failure must not end the script (set -e is off): each
    # step's failure returns.
    setup_python || return 1
    cargo build -q --locked -p programs -p sluice || return 1
    rm -rf "$target/wheels"
    (cd python && "../$PYVENV/bin/maturin" build -q --locked --profile dev -o "$target/wheels") || return 1
    wheel=$(ls "$target"/wheels/sluice-*.whl) || return 1
    "$PYVENV/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel" || return 1
    SLUICE_BIN="$target/debug/sluice" SLUICE_BPF_DIR="$target/bpf" \
        SLUICE_PCAP_DIR="${SLUICE_PCAP_DIR:-$PWD/../shared/pcaps/tcpdump}" \
        "$PYVENV/bin/python" -m pytest -q -p no:cacheprovider python/tests || rc=$?
    say "python package: wheel built, installed and tested in $((SECONDS - t0)) s"
    return "$rc"
}

# The Python package's benchmarks (python/benches/, docs/performance.md):
# a release-profile wheel (in a folder of its own: test_python's is the
# dev profile) and the release `sluice`, then each benchmark script.
bench_python() {
    local target=${CARGO_TARGET_DIR:-$PWD/target} b
    setup_python
    cargo build -q --release --locked -p programs -p sluice
    rm -rf "$target/wheels-release"
    (cd python && "../$PYVENV/bin/maturin" build -q --locked --release -o "$target/wheels-release")
    "$PYVENV/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps \
        "$target"/wheels-release/sluice-*.whl
    for b in run_vs_cli table_export baselines cluster; do
        SLUICE_BIN="$target/release/sluice" SLUICE_BPF_DIR="$target/bpf" \
            "$PYVENV/bin/python" "python/benches/$b.py"
    done
}

setup() {
    setup_apt
    setup_rust
    setup_thirdparty
    setup_sources
    setup_osken
}

# Every fuzz target (fuzz/Cargo.toml), in order.
FUZZ_TARGETS=(decode assemble interp elf verifier jit cbpf xpf captures openflow
    packet genspec btf expr tc ofctl ipfix routes mapupdate)

# Targets built without AddressSanitizer and without comparison tracing (into
# fuzz/target-nosan): the verifier target checks soundness with the checked
# interpreter, which bounds every access itself, and spent most of its time in
# ASan and in tracing the comparisons of state pruning, which guide no
# mutation (its bytes are decisions of the generator). On the same 2,200
# programs it is 11x faster than the default build (docs/reliability.md); the
# interp and jit targets keep ASan over the same VM code.
FUZZ_NO_ASAN=" verifier "

# `cargo fuzz CMD` for target $2, with the target's sanitizer and build folder.
fuzz_cargo() {
    local cmd=$1 t=$2
    shift 2
    if [[ $FUZZ_NO_ASAN == *" $t "* ]]; then
        (cd fuzz && CARGO_TARGET_DIR=target-nosan cargo +nightly fuzz "$cmd" -s none --no-trace-compares "$t" "$@")
    else
        (cd fuzz && cargo +nightly fuzz "$cmd" "$t" "$@")
    fi
}

# Seeds fuzz/corpus/<target>/ (not in git): fuzz/seed.py takes the conformance
# suite, the shared captures, the example objects and the tests' text inputs;
# isa's asm2bin example turns the conformance programs into bytecode.
fuzz_seed() {
    local corpus=fuzz/corpus conf=${SLUICE_CONFORMANCE_DIR:-../shared/conformance/bpf_conformance/tests}
    # The example objects (target/bpf/*.o) come with the programs crate.
    [ -n "${FUZZ_OBJECTS:-}" ] || [ -d target/bpf ] || cargo build -q --locked -p programs
    python3 fuzz/seed.py "$corpus" "$conf" "${SLUICE_PCAP_DIR:-../shared/pcaps/tcpdump}" \
        "${FUZZ_OBJECTS:-target/bpf}"
    local tmp
    tmp=$(mktemp -d)
    cargo run -q --locked -p isa --example asm2bin -- "$tmp" "$corpus"/assemble/*.s
    local f
    for f in "$tmp"/*; do
        local n
        n=$(basename "$f")
        cp "$f" "$corpus/decode/$n"
        { printf '\001'; cat "$f"; } >"$corpus/verifier/$n"
        { printf '\010\010\010\010\010\010\010\010'; cat "$f"; } >"$corpus/interp/$n"
        cp "$corpus/interp/$n" "$corpus/jit/$n"
    done
    rm -rf "$tmp"
}

# The output of a log's last run (after its last `--- run N ---` line).
last_run() { awk '/^--- run /{buf=""; next} {buf = buf $0 "\n"} END{printf "%s", buf}' "$1"; }

# Runs every target (or those FUZZ_ONLY names) for FUZZ_SECONDS (60) on one
# core; a crash (or an input that takes over 10 s) ends a run, the target
# starts again for the time left (at most 20 times). Each target's output goes
# to fuzz/logs/<target>.log, its crashes to fuzz/artifacts/<target>/. Prints
# runs (libFuzzer's stat::number_of_executed_units, summed), seconds ("Done N
# runs in S seconds", or the time a crashed run took) and crashes per target;
# fails when any target crashed.
fuzz_all() {
    local secs=${FUZZ_SECONDS:-60} t log rc runs took crashes n start left failed=() rows=()
    local targets
    read -ra targets <<<"${FUZZ_ONLY:-${FUZZ_TARGETS[*]}}"
    fuzz_seed
    (cd fuzz && cargo +nightly fuzz build)
    for t in $FUZZ_NO_ASAN; do fuzz_cargo build "$t"; done
    mkdir -p fuzz/logs
    for t in "${targets[@]}"; do
        log=fuzz/logs/$t.log
        : >"$log"
        say "fuzzing $t for ${secs}s"
        runs=0 took=0 crashes=0
        for ((n = 0; n < 20 && took < secs; n++)); do
            left=$((secs - took))
            start=$SECONDS
            rc=0
            fuzz_cargo run "$t" -- -max_total_time="$left" -timeout=10 \
                -print_final_stats=1 >>"$log" 2>&1 || rc=$?
            runs=$((runs + $(last_run "$log" | sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' |
                tail -n 1 | grep . || echo 0)))
            if [ "$rc" -eq 0 ]; then
                took=$((took + $(last_run "$log" | sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' |
                    tail -n 1 | grep . || echo "$((SECONDS - start))")))
                break
            fi
            crashes=$((crashes + 1))
            took=$((took + SECONDS - start))
            # Stats of the next run are told apart by what came before.
            echo "--- run $((n + 2)) ---" >>"$log"
        done
        [ "$crashes" -eq 0 ] || failed+=("$t")
        rows+=("$(printf '%-10s %12s %8s %8s' "$t" "$runs" "$took" "$crashes")")
    done
    printf '%-10s %12s %8s %8s\n' target runs seconds crashes
    printf '%s\n' "${rows[@]}"
    if ((${#failed[@]})); then
        say "crashes found by: ${failed[*]} (inputs under fuzz/artifacts/, logs under fuzz/logs/)"
        return 1
    fi
}

# `cargo test ARGS...` over every test binary (`--no-fail-fast`), its
# output also in log file $1; then one summary: how many tests passed and
# failed, and which tests of which binaries failed (or which binaries
# failed without a test result: a crash, a build error). Returns non-zero
# when anything failed.
run_tests() {
    local log=$1 rc=0 t0=$SECONDS
    shift
    mkdir -p "$(dirname "$log")"
    cargo test --no-fail-fast "$@" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
    summarize_tests "$log" "$((SECONDS - t0))" && [ "$rc" -eq 0 ]
}

# The summary of a `cargo test` log (see run_tests); non-zero on failures.
summarize_tests() {
    local log=$1 secs=$2
    awk -v secs="$secs" '
        /^ *Running / { bin = $0; sub(/^ *Running /, "", bin); sub(/ \(.*$/, "", bin) }
        /^ *Doc-tests / { bin = $0; sub(/^ *Doc-tests /, "doc-tests of ", bin) }
        /^test .* \.\.\. FAILED$/ { t = $0; sub(/^test /, "", t); sub(/ \.\.\. FAILED$/, "", t)
            failed[++nf] = bin ": " t }
        /^test result: / { passed += $4; fails += $6; ignored += $8; binaries++ }
        /^error: test failed, to rerun pass / { b = $0; sub(/^error: test failed, to rerun pass /, "", b)
            bad[++nb] = b }
        END {
            printf "[dev.sh] tests: %d passed, %d failed, %d ignored in %d binaries (%d s)\n", \
                passed, fails, ignored, binaries, secs > "/dev/stderr"
            for (i = 1; i <= nf; i++) printf "[dev.sh]   FAILED %s\n", failed[i] > "/dev/stderr"
            if (nb) {
                printf "[dev.sh] failing test binaries (rerun one with cargo test ARGS):\n" > "/dev/stderr"
                for (i = 1; i <= nb; i++) printf "[dev.sh]   %s\n", bad[i] > "/dev/stderr"
            }
            exit (fails > 0 || nb > 0 || binaries == 0)
        }' "$log"
}

# The test binaries that send packets through the kernel (veth pairs in
# namespaces of their own: XDP, AF_XDP, AF_PACKET, tc) and count them
# (cargo takes each --test from whichever package has it: `live` is in
# both).
KERNEL_SUITES=(
    -p sluice -p pipeline -p tc -p tccompile -p difftest
    --test port_loss --test xsk --test veth --test xdp_kill --test soak --test switch_live
    --test capture --test live --test monitor --test monitor_sample --test monitor_rtt
    --test tc --test xpf --test bpf_kernel --test u32_kernel --test cmdline_kernel
    --test real --test tc_kernel
)

cmd=${1:-help}
case "$cmd" in
setup)
    setup
    ;;
demo)
    setup
    cargo build --release -q -p sluice
    ./target/release/sluice demo
    ;;
test)
    setup
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets --locked -- -D warnings
    tests_ok=0
    run_tests target/test-logs/test.log --workspace --locked || tests_ok=$?
    # The suite's summary line, visible in CI logs (the test above asserts it).
    cargo run -q --locked -p sluice -- conformance "${SLUICE_CONFORMANCE_DIR:-../shared/conformance/bpf_conformance/tests}" | tail -n 1
    # The Python package: its wheel built, installed, its pytest suite run.
    python_ok=0
    test_python || python_ok=$?
    [ "$tests_ok" -eq 0 ] || { say "the suite failed (log: target/test-logs/test.log)"; exit 1; }
    [ "$python_ok" -eq 0 ] || { say "the Python package's tests failed"; exit 1; }
    ;;
python)
    setup_apt
    setup_rust
    test_python
    ;;
stress-test)
    # The kernel-facing suites with stress-ng keeping every core busy
    # (STRESS_CPUS workers, default: one per core), built first without
    # the load; kernel tests must run (SLUICE_REQUIRE_KERNEL=1: root).
    setup
    command -v stress-ng >/dev/null 2>&1 || { say "stress-ng is not installed"; exit 1; }
    suites=("${KERNEL_SUITES[@]}")
    cargo test --locked --no-run "${suites[@]}"
    cpus=${STRESS_CPUS:-$(nproc)}
    stress-ng --cpu "$cpus" --timeout "${STRESS_SECONDS:-1800}" --quiet &
    stress_pid=$!
    trap 'kill "$stress_pid" 2>/dev/null || true' EXIT
    say "stress-ng --cpu $cpus running (PID $stress_pid)"
    sleep 2
    stress_ok=0
    # --show-output: the drops the tests counted (their notes) go to the log.
    SLUICE_REQUIRE_KERNEL=1 SOAK_SECONDS=${SOAK_SECONDS:-10} \
        run_tests target/test-logs/stress-test.log --locked "${suites[@]}" -- --show-output ||
        stress_ok=$?
    notes=$(grep -c 'dropped by the kernel' target/test-logs/stress-test.log || true)
    say "tests that saw the kernel drop frames (and counted them): $notes"
    kill "$stress_pid" 2>/dev/null || true
    wait "$stress_pid" 2>/dev/null || true
    trap - EXIT
    [ "$stress_ok" -eq 0 ] || { say "the kernel-facing suites failed under load (log: target/test-logs/stress-test.log)"; exit 1; }
    say "the kernel-facing suites passed with $cpus stress-ng CPU workers"
    ;;
bench)
    setup
    if [ "${2:-}" = python ]; then
        bench_python
        exit
    fi
    cargo bench -p vm --bench interp
    cargo bench -p sluice --bench per_packet
    cargo bench -p sluice --bench replay
    cargo bench -p sluice --bench xsk
    cargo bench -p sluice --bench figure1
    cargo bench -p sluice --bench switch
    cargo bench -p sluice --bench lpm
    bench_python
    ;;
fuzz)
    # System packages (libpcap for `expr`) and Rust; no third-party programs.
    setup_apt
    setup_rust
    command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
    fuzz_all
    ;;
sanitize)
    setup_rust
    # The nightly toolchain, with the standard library's sources (TSan
    # rebuilds std instrumented) and Miri.
    if rustup run nightly rustc --version >/dev/null 2>&1; then
        rustup component add --toolchain nightly rust-src miri
    else
        rustup toolchain install nightly --profile minimal --component rust-src,miri
    fi
    host=x86_64-unknown-linux-gnu
    mkdir -p target/tsan target/miri
    failed=()

    # ThreadSanitizer over the stress test of the maps shared by threads,
    # then over whole hooks on several threads (runtime's siblings test:
    # helpers and the interpreter instrumented, the JIT's code not), in a
    # target dir of its own (instrumented std and crates). The one race the
    # kernel has too is suppressed by name (tools/tsan-suppressions.txt).
    t0=$SECONDS
    tsan_log=target/tsan/concurrent.log
    tsan_rc=0
    tsan() {
        RUSTFLAGS="-Zsanitizer=thread" \
            TSAN_OPTIONS="suppressions=$PWD/tools/tsan-suppressions.txt print_suppressions=1" \
            cargo +nightly test -Zbuild-std --target "$host" --target-dir target/tsan "$@"
    }
    { tsan -p maps --test concurrent && tsan -p runtime --test siblings; } 2>&1 |
        tee "$tsan_log" || tsan_rc=$?
    tsan_secs=$((SECONDS - t0))
    races=$(grep -c 'WARNING: ThreadSanitizer' "$tsan_log" || true)
    suppressed=$(sed -n 's/^ThreadSanitizer: Matched \([0-9]*\) suppressions.*/\1/p' "$tsan_log" | tail -n 1)
    [ "$tsan_rc" -eq 0 ] && [ "$races" -eq 0 ] || failed+=(tsan)

    # Miri over the maps crate (every test file; the ones that measure the
    # kernel's page accounting are ignored under Miri), the VM's memory
    # regions and the interpreter's checked accesses (vm's other test files
    # run the JIT's machine code, which Miri cannot). Programs hold
    # addresses in registers: permissive provenance.
    t0=$SECONDS
    miri_log=target/miri/sanitize.log
    miri_rc=0
    {
        MIRIFLAGS="-Zmiri-permissive-provenance" cargo +nightly miri test -p maps &&
            MIRIFLAGS="-Zmiri-permissive-provenance" cargo +nightly miri test -p vm --lib --test semantics
    } 2>&1 | tee "$miri_log" || miri_rc=$?
    miri_secs=$((SECONDS - t0))
    ub=$(grep -c '^error: Undefined Behavior' "$miri_log" || true)
    miri_tests=$(awk '/^test result:/ { p += $4; i += $8 } END { print p + 0 " passed, " i + 0 " ignored" }' "$miri_log")
    [ "$miri_rc" -eq 0 ] && [ "$ub" -eq 0 ] || failed+=(miri)

    tsan_tests=$(awk '/^test result:/ { p += $4; f += $6 } END { print p + 0 " passed, " f + 0 " failed" }' "$tsan_log")
    say "ThreadSanitizer: ${tsan_tests:-no result}; $races data race reports, ${suppressed:-0} suppressed as the kernel's; ${tsan_secs}s (log: $tsan_log)"
    say "Miri: $miri_tests; $ub undefined behaviour reports; ${miri_secs}s (log: $miri_log)"
    if ((${#failed[@]})); then
        say "sanitize failed: ${failed[*]}"
        exit 1
    fi
    ;;
*)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    [ "$cmd" = help ] || exit 2
    ;;
esac
