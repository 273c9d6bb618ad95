#!/usr/bin/env bash
# Build (once) and print the path of a venv that sees this machine's packages but holds the lowest
# Textual spectui supports (the floor in pyproject.toml), so the console's tests run on it too.
#
#   scripts/textual_floor_venv.sh
#
# The venv lives under ${SPECTUI_TEXTUAL_VENVS:-~/.cache/spectui/textual-venvs}/VERSION.
set -euo pipefail
cd "$(dirname "$0")/.."
version="$(python3 -c 'import re,sys; t=open("pyproject.toml").read(); print(re.search(r"\"textual>=([0-9.]+)\"", t).group(1))')"
root="${SPECTUI_TEXTUAL_VENVS:-$HOME/.cache/spectui/textual-venvs}"
venv="$root/$version"
marker="$venv/.spectui-ready"
if [ -f "$marker" ]; then
  echo "$venv"
  exit 0
fi
rm -rf "$venv"
mkdir -p "$root"
python3 -m venv --system-site-packages "$venv" >&2
"$venv/bin/python" -m pip install -q --disable-pip-version-check "textual==$version" >&2
"$venv/bin/python" -c "import textual, sys; v = textual.__version__; sys.exit(0 if v.startswith('$version') else 'textual ' + v)"
touch "$marker"
echo "$venv"
