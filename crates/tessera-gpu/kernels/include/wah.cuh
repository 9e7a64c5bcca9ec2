// wah.cuh: placeholder.
#ifndef TESSERA_WAH_CUH
#define TESSERA_WAH_CUH
#include "common.cuh"
#endif
