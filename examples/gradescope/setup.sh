#!/usr/bin/env bash
# Gradescope autograder setup (Ubuntu image): a CPU-only torch, then gradlab from the wheel uploaded beside this file
# (make wheel writes dist/gradlab-<version>-py3-none-any.whl). Zip setup.sh, run_autograder and the wheel.
set -euo pipefail
apt-get install -y python3 python3-pip
pip3 install torch --index-url https://download.pytorch.org/whl/cpu
pip3 install /autograder/source/gradlab-*.whl
