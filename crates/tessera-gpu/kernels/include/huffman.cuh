// huffman.cuh: placeholder.
#ifndef TESSERA_HUFFMAN_CUH
#define TESSERA_HUFFMAN_CUH
#include "common.cuh"
#endif
