# The guest kernels (images/kernels), for scripts (sourced): GMEM_KERNELS, newest first, and
# GMEM_KERNEL_PACKAGES, the Debian package[/suite] of each one's source.
GMEM_KERNELS=()
GMEM_KERNEL_PACKAGES=()
while read -r _v _p; do
	case "$_v" in '' | '#'*) continue ;; esac
	GMEM_KERNELS+=("$_v")
	GMEM_KERNEL_PACKAGES+=("$_p")
done <"$(dirname "${BASH_SOURCE[0]}")/../../images/kernels"
unset _v _p
# "7.3|6.12": for messages and usage texts.
GMEM_KERNEL_CHOICES=$(IFS='|'; echo "${GMEM_KERNELS[*]}")
