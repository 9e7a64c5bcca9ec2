// merge.cuh: placeholder.
#ifndef TESSERA_MERGE_CUH
#define TESSERA_MERGE_CUH
#include "common.cuh"
#endif
