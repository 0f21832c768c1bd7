# gmem_devices private|coherent: the N of every /dev/gmem_accelN of that kind (CAP bit 7,
# COHERENT), in order. Sourced by the guest test and benchmark scripts (busybox sh).
gmem_devices() {
	for d in /sys/class/gmem_accel/gmem_accel*; do
		[ -e "$d" ] || continue
		if [ $(($(cat "$d/capabilities") & 0x80)) -ne 0 ]; then
			kind=coherent
		else
			kind=private
		fi
		[ "$kind" = "$1" ] && echo "${d##*gmem_accel}"
	done
	return 0
}
