# Device set for gmem-accel's trimmed QEMU (--without-default-devices): the q35 machine,
# PCIe root ports to plug devices into, intel-iommu (run-vm.sh puts one in front of the
# devices unless --no-iommu), and the device itself.
CONFIG_Q35=y
CONFIG_PCIE_PORT=y
CONFIG_VTD=y
CONFIG_ISA_DEBUG=y
CONFIG_GMEM_ACCEL=y
