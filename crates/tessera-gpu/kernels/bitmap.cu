// bitmap.cu: placeholder, filled in by the bitmap work.
#include "include/common.cuh"
