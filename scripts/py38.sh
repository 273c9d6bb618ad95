#!/usr/bin/env bash
# Print the path of a Python 3.8 interpreter (the oldest the agent supports), installing one if it can.
#
#   PY38="$(scripts/py38.sh)" || echo "no Python 3.8"
#
# Looks, in order, at: $SPECTUI_PY38; pyenv's versions ($PYENV_ROOT, else ~/.pyenv); uv's managed
# Pythons; python3.8 on PATH and in /usr/bin, /usr/local/bin. Then tries to install one: the
# distribution's package (apt-get, where it has python3.8: Ubuntu 20.04, Debian with a backport),
# then `uv python install 3.8` (where uv and its download site are reachable).
# No registry this project reaches (PyPI, Debian's packages, npm) hosts a CPython 3.8 build: without
# one of the above, it prints one line on stderr saying so and exits 1.
set -uo pipefail

is38() { [ -n "$1" ] && [ -x "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 8))' >/dev/null 2>&1; }
found() { readlink -f "$1" 2>/dev/null || echo "$1"; exit 0; }

candidates() {
  [ -n "${SPECTUI_PY38:-}" ] && echo "$SPECTUI_PY38"
  local root="${PYENV_ROOT:-$HOME/.pyenv}"
  ls -d "$root"/versions/3.8.*/bin/python3.8 2>/dev/null | sort -rV
  if command -v uv >/dev/null 2>&1; then uv python find --no-python-downloads 3.8 2>/dev/null; fi
  ls -d "${XDG_DATA_HOME:-$HOME/.local/share}"/uv/python/cpython-3.8.*/bin/python3.8 2>/dev/null | sort -rV
  command -v python3.8 2>/dev/null
  echo /usr/bin/python3.8
  echo /usr/local/bin/python3.8
}

while read -r p; do
  if is38 "$p"; then found "$p"; fi
done < <(candidates)

# Install one.
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  if ! apt-cache show python3.8 >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 || true
  fi
  if apt-cache show python3.8 >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.8 >/dev/null 2>&1 || true
    if is38 /usr/bin/python3.8; then found /usr/bin/python3.8; fi
  fi
fi
if command -v uv >/dev/null 2>&1; then
  if timeout 300 uv python install 3.8 >/dev/null 2>&1; then
    p="$(uv python find --no-python-downloads 3.8 2>/dev/null)"
    if is38 "$p"; then found "$p"; fi
  fi
fi

echo "scripts/py38.sh: no Python 3.8 here (looked in \$SPECTUI_PY38, pyenv, uv, PATH; the distribution has no python3.8 package and no reachable registry hosts a CPython 3.8 build); set SPECTUI_PY38 to one" >&2
exit 1
