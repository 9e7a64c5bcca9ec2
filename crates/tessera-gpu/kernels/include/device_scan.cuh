// device_scan.cuh: placeholder.
#ifndef TESSERA_DEVICE_SCAN_CUH
#define TESSERA_DEVICE_SCAN_CUH
#include "common.cuh"
#endif
