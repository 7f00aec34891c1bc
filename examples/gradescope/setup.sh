#!/usr/bin/env bash
# Gradescope autograder setup, run once as root when Gradescope builds the image (Ubuntu): bubblewrap, the sandbox
# every submission runs in; a venv for gradlab (never the system pip: Ubuntu 24.04's Python is "externally managed",
# PEP 668, and refuses it) made by a Python >= 3.10 the image has, else by one apt installs; a CPU-only torch in it,
# unless the image's Python already has torch (then the venv sees that one: --system-site-packages); then gradlab from
# the wheel uploaded beside this file (`make wheel` writes dist/gradlab_teach-<version>-py3-none-any.whl).
# Zip setup.sh, run_autograder, course.toml and the wheel. AUTOGRADER_ROOT: for a dry run elsewhere than /autograder.
set -euo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
venv="$root/gradlab-venv"  # run_autograder runs "$venv/bin/gradlab"

apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
}

# The first of python3, python3.13 ... python3.10 that is >= 3.10 and can make a venv with pip in it (Debian's
# python3-venv brings the wheels ensurepip installs: without them ensurepip.version() fails)
find_python() {
    local p
    for p in python3 python3.13 python3.12 python3.11 python3.10; do
        if command -v "$p" >/dev/null 2>&1 &&
           "$p" -c 'import sys, ensurepip, venv; ensurepip.version(); sys.exit(sys.version_info < (3, 10))' \
               >/dev/null 2>&1; then
            command -v "$p"
            return 0
        fi
    done
    return 1
}

command -v bwrap >/dev/null 2>&1 || { apt-get update -q; apt_install bubblewrap; }
if ! python="$(find_python)"; then
    apt-get update -q
    # Ubuntu 22.04 (3.10) and 24.04 (3.12): the image's own python3 with its venv module
    apt_install python3 python3-venv || true
    if ! python="$(find_python)"; then
        # an older image (20.04: 3.8): Python 3.11 from the deadsnakes PPA
        apt_install software-properties-common
        add-apt-repository -y ppa:deadsnakes/ppa
        apt-get update -q
        apt_install python3.11 python3.11-venv
        python="$(find_python)" || { echo "setup.sh: no Python >= 3.10 could be installed" >&2; exit 1; }
    fi
fi
echo "setup.sh: gradlab's venv $venv, made by $python ($("$python" --version 2>&1))"

rm -rf "$venv"
if "$python" -c 'import torch' >/dev/null 2>&1; then
    # the image's torch, not a second copy; and its pip where it has one (a venv's own, from ensurepip, would shadow
    # the image's packages with its old setuptools, older than torch asks for)
    "$python" -m venv --system-site-packages --without-pip "$venv"
    "$venv/bin/python" -m pip --version >/dev/null 2>&1 || "$venv/bin/python" -m ensurepip --upgrade
else
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet torch --index-url https://download.pytorch.org/whl/cpu
fi
wheels=("$root"/source/gradlab_teach-*.whl)
if [ ! -f "${wheels[0]}" ]; then
    echo "setup.sh: no gradlab_teach-*.whl beside setup.sh in $root/source: zip the wheel (make wheel) with it" >&2
    exit 1
fi
"$venv/bin/python" -m pip install --quiet "${wheels[@]: -1}"
# Where the container refuses namespaces (Docker's default seccomp profile), gradlab falls back to running each
# submission under a uid of its own; that uid must not be able to read gradlab's package (its references).
chmod -R o-rwx "$("$venv/bin/python" -c 'import gradlab, os; print(os.path.dirname(gradlab.__file__))')"
"$venv/bin/gradlab" --version
