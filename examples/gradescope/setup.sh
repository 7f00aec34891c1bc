#!/usr/bin/env bash
# Gradescope autograder setup (Ubuntu image): bubblewrap, the sandbox every submission runs in; a CPU-only torch;
# then gradlab from the wheel uploaded beside this file (make wheel writes dist/gradlab-<version>-py3-none-any.whl).
# Zip setup.sh, run_autograder, course.toml and the wheel.
set -euo pipefail
apt-get update
apt-get install -y python3 python3-pip bubblewrap
pip3 install torch --index-url https://download.pytorch.org/whl/cpu
pip3 install /autograder/source/gradlab-*.whl
# Where the container refuses namespaces (Docker's default seccomp profile), gradlab falls back to running each
# submission under a uid of its own; that uid must not be able to read gradlab's package (its references).
chmod -R o-rwx "$(python3 -c 'import gradlab, os; print(os.path.dirname(gradlab.__file__))')"
