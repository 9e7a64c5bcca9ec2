// lll.cu: placeholder, filled in by the lll work.
#include "include/common.cuh"
