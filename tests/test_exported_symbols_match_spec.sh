#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libcufile.so.0 has SONAME libcufile.so.0 and exports exactly the functions
# of the cuFile 1.15 to 1.19 API (both cuFileDriverClose and
# cuFileDriverClose_v2, and the _v1190 statistics getters that cufile.h maps
# the 1.19 surface's cuFileGetStatsL1/L2/L3 to), nothing else.   Usage: test_exported_symbols_match_spec.sh LIBRARY
set -eu
lib=$1
expected="cuFileBatchIOCancel cuFileBatchIODestroy cuFileBatchIOGetStatus cuFileBatchIOSetUp
cuFileBatchIOSubmit cuFileBufDeregister cuFileBufRegister cuFileDriverClose cuFileDriverClose_v2
cuFileDriverGetProperties cuFileDriverOpen cuFileDriverSetMaxCacheSize cuFileDriverSetMaxDirectIOSize
cuFileDriverSetMaxPinnedMemSize cuFileDriverSetPollMode cuFileGetBARSizeInKB cuFileGetParameterBool
cuFileGetParameterMinMaxValue cuFileGetParameterPosixPoolSlabArray cuFileGetParameterSizeT
cuFileGetParameterString cuFileGetStatsL1 cuFileGetStatsL2 cuFileGetStatsL3 cuFileGetStatsLevel
cuFileGetVersion cuFileHandleDeregister cuFileHandleRegister cuFileRead cuFileReadAsync
cuFileSetParameterBool cuFileSetParameterPosixPoolSlabArray cuFileSetParameterSizeT
cuFileSetParameterString cuFileSetStatsLevel cuFileStatsReset cuFileStatsStart cuFileStatsStop
cuFileStreamDeregister cuFileStreamRegister cuFileUseCount cuFileWrite cuFileWriteAsync
cuFileGetStatsL1_v1190 cuFileGetStatsL2_v1190 cuFileGetStatsL3_v1190
cuFileDriverSetP2PFlags cuFileDriverGetP2PFlags
cuFileSetParameterGpuBounceBufferSlabArray cuFileGetParameterGpuBounceBufferSlabArray
cuFileExportPCIeTopology cuFileReadv cuFileWritev"
want=$(echo $expected | tr ' ' '\n' | sort)
have=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TW]$/ {print $3}' | sed 's/@.*//' | sort)
if [ "$want" != "$have" ]; then
	echo "exported functions differ from the 1.15-1.19 API:"
	diff <(echo "$want") <(echo "$have") || true
	exit 1
fi
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libcufile.so.0 ] || { echo "SONAME is '$soname'"; exit 1; }
# No data symbols or other objects leak out either.
others=$(nm -D --defined-only "$lib" | awk '$2 !~ /^[TWA]$/ {print $3}')
[ -z "$others" ] || { echo "unexpected exported symbols: $others"; exit 1; }
echo "$(echo "$have" | wc -l) functions exported, SONAME $soname"
