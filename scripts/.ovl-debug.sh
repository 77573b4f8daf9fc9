export LD_LIBRARY_PATH=$PWD/.carry/jsonc/lib
B=build-gpu
cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF -DJSONC_ROOT=$PWD/.carry/jsonc -DLIBURING_ROOT=$PWD/.carry/liburing >/dev/null && cmake --build $B -j16 --target cufile gdsio overlap >/dev/null || exit 1
L=$PWD/$B/libcufile.so.0; G=$B/tools/gdsio; D=gpu-scratch/o.dat; mkdir -p gpu-scratch
LD_PRELOAD=$L $G -f $D -s 1G -Z >/dev/null 2>&1; cat $D >/dev/null
for v in "OPENCUFILE_IO_THREADS=0" "OPENCUFILE_IO_BACKEND=psync" "X=1"; do
  echo "=== $v"
  rm -f /tmp/l.log
  env $v CUFILE_LOGGING_LEVEL=DEBUG CUFILE_LOGFILE_PATH=/tmp/l.log LD_PRELOAD=$L timeout 10 $B/bench/overlap -f $D -s 256M -i 16M -b -r 1 -x 3 2>&1 | tail -5
  echo "rc=$?"; grep -v "ring of\|arena\|prepared" /tmp/l.log | tail -12 | cut -c1-300
done
