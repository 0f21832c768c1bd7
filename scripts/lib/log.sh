# Shared progress and error helpers for gmem-accel's scripts (sourced, not run).
GMEM_T0=${GMEM_T0:-$(date +%s)}
export GMEM_T0
step() { printf '==> [%4ds] %s\n' $(($(date +%s) - GMEM_T0)) "$*"; }
note() { printf '    %s\n' "$*"; }
die() { printf 'gmem-accel: error: %s\n' "$*" >&2; exit 1; }
