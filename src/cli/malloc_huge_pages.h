// `tenure server` asks glibc for transparent huge pages on its large
// allocations (decision 0046). A restore's state and a large answer are
// fresh mappings of up to 64 MiB (main.cc maps every block of 1 MiB or more
// on its own), and on a virtual machine each first touch of a 4 KiB page
// costs about 20 µs: 150-250 ms of the loop thread per 27 MB copy, measured.
// With 2 MiB pages the same copy took 19 ms. glibc reads its tunable
// (glibc.malloc.hugetlb=1: madvise MADV_HUGEPAGE on what it maps) only at
// process start, so the server executes itself again once with it set.
#pragma once

namespace tenure::cli {

// Re-executes the process with GLIBC_TUNABLES=...:glibc.malloc.hugetlb=1
// unless it is set already, TENURE_MALLOC_HUGETLB=0 (valgrind runs, which
// would not follow the exec) says not to, or the kernel's transparent huge
// pages are off. Returns only when it does not re-execute.
void ReexecWithMallocHugePages(char** argv);

}  // namespace tenure::cli
