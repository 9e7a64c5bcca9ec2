// lll.cuh: placeholder.
#ifndef TESSERA_LLL_CUH
#define TESSERA_LLL_CUH
#include "common.cuh"
#endif
