#!/bin/bash
# scripts/build-kernel.sh stopped (SIGTERM, SIGINT) stops its make too: whether in the
# kernel's configuration or in its build, nothing of it goes on compiling afterwards. A stand-in
# make (first in PATH) that sleeps where the real one would work, and a stand-in kernel tree.
. "$(dirname "$0")/../scripts/lib/tap.sh"
. "$(dirname "$0")/kernel_stub.sh"
: "${REPO:?set REPO to the source tree}"

stub=$(mktemp -d)
trap 'xargs -r kill 2>/dev/null <"$stub/pids"; rm -rf "$stub"' EXIT
: >"$stub/pids"
kernel_stub "$stub"
cat >"$stub/bin/make" <<'STUB'
#!/bin/bash
# kernelversion answers; configuration passes unless STUB_SLOW_CONFIG; the rest "works" long.
for a in "$@"; do case $a in O=*) out=${a#O=} ;; esac; done
case " $* " in
*" kernelversion "*) echo 7.3.0; exit 0 ;;
*" tinyconfig "* | *" olddefconfig "*)
	[ -n "${STUB_SLOW_CONFIG:-}" ] || { : >"$out/.config"; exit 0; } ;;
esac
echo $$ >>"$STUB/pids"
exec sleep 300
STUB
chmod +x "$stub/bin/make"

# stop_in SIGNAL: start a build, wait for the stand-in make to be at work, send SIGNAL to the
# script; ok if the script ends with 128 + the signal's number and the make is gone (5 s).
stop_in() {
	local sig=$1 pid status=0 alive=""
	# (job control: a background job of a script would start with SIGINT ignored, where a
	# build in the foreground gets the terminal's ^C)
	set -m
	rm -rf "$stub/cache"
	: >"$stub/pids"
	PATH="$stub/bin:$PATH" STUB=$stub GMEM_CACHE=$stub/cache GMEM_KERNEL_SRC=$stub/src \
		"$REPO/scripts/build-kernel.sh" --kernel 7.3 >"$stub/out" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		[ -s "$stub/pids" ] && break
		sleep 0.1
	done
	[ -s "$stub/pids" ] || { echo "no make started" | diag; kill "$pid"; return 1; }
	kill -s "$sig" "$pid"
	wait "$pid" || status=$?
	for _ in $(seq 50); do
		alive=$(xargs -r ps -o pid= -p <"$stub/pids" || true)
		[ -z "$alive" ] && break
		sleep 0.1
	done
	[ "$status" = $((128 + $(kill -l "$sig"))) ] && [ -z "$alive" ] && return 0
	echo "exit $status; still running: ${alive:-none}" | diag
	return 1
}

plan 3
check "stopped in its configuration (TERM): the make goes with it" \
	env STUB_SLOW_CONFIG=1 bash -c "$(declare -f stop_in diag); stub='$stub' REPO='$REPO' stop_in TERM"
check "stopped in its build (TERM): the make goes with it" \
	bash -c "$(declare -f stop_in diag); stub='$stub' REPO='$REPO' stop_in TERM"
check "interrupted in its build (INT): the make goes with it" \
	bash -c "$(declare -f stop_in diag); stub='$stub' REPO='$REPO' stop_in INT"
tap_done
