# Cache layout shared by the build scripts (sourced). Everything expensive lives outside the
# checkout so fresh clones and CI reuse it; each entry is keyed by version + configuration hash.
GMEM_CACHE=${GMEM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gmem-accel}
export GMEM_CACHE

# hash_of FILE|STRING... : short stable hash of the arguments (file contents for files).
hash_of() {
	local a
	for a in "$@"; do
		if [ -f "$a" ]; then cat "$a"; else printf '%s\n' "$a"; fi
	done | sha256sum | cut -c1-12
}

# Print ninja/make progress as a few lines instead of thousands: every 10% of [N/M].
progress_filter() {
	awk -v what="$1" '
		match($0, /^\[[0-9]+\/[0-9]+\]/) {
			split(substr($0, 2, RLENGTH - 2), nm, "/")
			pct = int(100 * nm[1] / nm[2])
			if (pct >= last + 10 || nm[1] == nm[2]) { printf "    %s: %d%% (%d/%d)\n", what, pct, nm[1], nm[2]; last = pct; fflush() }
			next
		}
		/(error|warning): |^FAILED: / { print; fflush() }'
}
