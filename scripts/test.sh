#!/usr/bin/env bash
# The README's test command: `cargo test --workspace` (arguments are passed on, e.g. --locked),
# then the Python package's tests (python/tests/) against a wheel built here, in a fresh virtual
# environment under target/.
#
# The Python part needs python3 with venv and pip, and the packages maturin, pytest and pyarrow
# from the package index. Outside CI it is skipped, with the reason printed, when one is
# missing; TESSERA_REQUIRE_PYTHON=1 (.ci/run sets it) turns the skip into a failure.
#
# The extension is built in the dev profile (TESSERA_PYTHON_PROFILE to change it): its output
# folder and its dependencies' settings are the test profile's, so the dependencies `cargo test`
# compiled are reused and only PyO3 (as an extension module), the pyarrow bridge and the
# workspace's own crates are compiled again. (Not the test profile itself: `cargo rustc
# --profile test`, which maturin runs, builds a test harness, not the module.)
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace "$@"

echo "== Python package (python/tests)"
skip() {
    if [ "${TESSERA_REQUIRE_PYTHON:-0}" = 1 ]; then
        echo "python tests cannot run: $1 (TESSERA_REQUIRE_PYTHON=1 requires them)" >&2
        exit 1
    fi
    echo "python tests SKIPPED: $1"
    exit 0
}
py=${PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || skip "no $py on PATH"
venv=target/python-venv
rm -rf "$venv"
"$py" -m venv "$venv" >/dev/null 2>&1 || skip "$py cannot create a virtual environment (venv)"
vpy=$venv/bin/python
"$vpy" -m pip --version >/dev/null 2>&1 || skip "no pip in the virtual environment"
"$vpy" -m pip install --quiet --disable-pip-version-check maturin pytest pyarrow ||
    skip "pip could not install maturin, pytest and pyarrow"

profile=${TESSERA_PYTHON_PROFILE:-dev}
# Of the arguments, maturin takes the lock-file ones (--locked, --frozen, --offline).
lock_args=()
for a in "$@"; do
    case $a in --locked | --frozen | --offline) lock_args+=("$a") ;; esac
done
wheels=target/python-wheels
rm -rf "$wheels"
"$venv/bin/maturin" build --quiet --profile "$profile" --interpreter "$vpy" --out "$wheels" \
    ${lock_args[@]+"${lock_args[@]}"}
"$vpy" -m pip install --quiet --disable-pip-version-check --no-deps "$wheels"/tessera-*.whl

# The tests run outside the source tree's python/ folder so that they import the installed
# package; the CLI tests use the binary `cargo test` built.
cli_dir=target/$([ "$profile" = release ] && echo release || echo debug)
TESSERA_CLI=${TESSERA_CLI:-$PWD/$cli_dir/tessera} "$vpy" -m pytest -q -rs -p no:cacheprovider \
    python/tests
