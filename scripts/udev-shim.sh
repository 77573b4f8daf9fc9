# SPDX-License-Identifier: Apache-2.0
# udev-shim.sh - sourced by the GPU-machine scripts.  NVIDIA's libcufile
# refuses to register files whose block device has no udev data (VMs,
# containers have none).  udev_setup DIR creates the minimal entries
# (/run/udev/data/b<major>:<minor>, ID_FS_USAGE and ID_FS_TYPE) for the
# devices DIR may map to, remembering what it created; udev_cleanup removes
# exactly that, and /run/udev itself when udev_setup made it.

UDEV_CREATED_FILES=()
UDEV_DIR_CREATED=0

# Block device numbers NVIDIA's library may look up for the test directory.
udev_candidates() {
	local dir=$1 dev src pk
	{
		dev=$(stat -c '%d' "$dir" 2>/dev/null)
		if [ -n "$dev" ]; then
			echo "$(((dev >> 8) & 0xfff | ((dev >> 32) & ~0xfff))):$(((dev & 0xff) | ((dev >> 12) & ~0xff)))"
		fi
		findmnt -n -o MAJ:MIN --target "$dir" 2>/dev/null
		src=$(findmnt -n -o SOURCE --target "$dir" 2>/dev/null)
		if [ -n "$src" ] && [ -b "$src" ]; then
			lsblk -dno MAJ:MIN "$src" 2>/dev/null
			pk=$(lsblk -dno PKNAME "$src" 2>/dev/null | tr -d ' ')
			[ -n "$pk" ] && lsblk -dno MAJ:MIN "/dev/$pk" 2>/dev/null
		fi
		echo "254:0"
	} | tr -d ' ' | grep -E '^[0-9]+:[0-9]+$' | awk '!seen[$0]++'
}

udev_setup() {
	local mm f
	if [ ! -e /run/udev ]; then UDEV_DIR_CREATED=1; fi
	mkdir -p /run/udev/data || return 1
	for mm in $(udev_candidates "$1"); do
		f=/run/udev/data/b$mm
		if [ ! -e "$f" ]; then
			printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\n' >"$f" && UDEV_CREATED_FILES+=("$f")
		fi
	done
	echo "udev workaround files: ${UDEV_CREATED_FILES[*]:-none created} (dir created by us: $UDEV_DIR_CREATED)"
}

udev_cleanup() {
	local f
	for f in "${UDEV_CREATED_FILES[@]}"; do rm -f "$f"; done
	UDEV_CREATED_FILES=()
	if ((UDEV_DIR_CREATED)); then
		rm -rf /run/udev
		UDEV_DIR_CREATED=0
	fi
}
