// bitmap.cu: WAH / PLWAH compressed bitmaps on the GPU (docs/format/wah.md, plwah.md, "GPU
// notes"), after Andrzejewski and Wrembel, GPU-PLWAH (the paper). Host side: src/bitmap/.
//
// One CUDA module, its source in parts by operation: writer.cuh (the canonical writer and its
// overflow path), slots.cuh (slot ends, validation), compress.cuh, convert.cuh, decompress.cuh
// and ops.cuh; wah.cuh holds the word and element algebra they share.
//
// Kernels (each a thin wrapper over wah.cuh, ../primitives/scan.cuh, ../primitives/merge.cuh):
//   bm_extend                  the paper's Algorithm 1: packed bits -> one 32-bit word per group
//                              (31 bits + a 0), for callers that want the extended form;
//   bm_cmp_<flavor>            compression (Algorithms 1, 2 and 4, by heads), one pass: each
//                              group decides locally whether it starts a word, each tile counts
//                              and stages its words, a decoupled look-back over the tiles gives
//                              its offset and the fill run carried into it (see "compression by
//                              heads");
//   bm_compress_{reduce,apply}_<flavor>
//                              the same through the general canonical writer over the groups of
//                              a plain bitmap (2048 groups = 1984 words per tile staged in shared
//                              memory): the previous path, kept as a cross-check for the tests;
//   bm_slots_{reduce,apply}_<flavor>
//                              the group counts of a word stream scanned into slot `ends` (the
//                              scans of Algorithms 5 and 7), checking every counter (status =
//                              the first word with a zero counter) and summing in u64, so the
//                              host can compare the total with ceil(bit_len / 31) before any
//                              kernel trusts `ends`;
//   bm_dec_expand_<flavor>     Algorithm 5, output-partitioned: tile b (4096 groups) loads the
//                              words from its *tile start* (the word covering its first group,
//                              which the compressor writes as it goes) into shared memory, scans
//                              their ends there, and each thread walks 32 groups = 31 output
//                              words; bm_dec_{sums,tile_starts}_<flavor> compute the tile starts
//                              of a bitmap that has none (see "decompression");
//   bm_convert_*               Algorithm 6 (PLWAH -> WAH, and WAH -> PLWAH): the writer over the
//                              input's slots, which also merges fills longer than the PLWAH
//                              counter into one WAH fill_word;
//   bm_op_<op>_<flavor>        AND / OR / XOR / AND-NOT on compressed bitmaps, improving on
//                              Algorithm 7: the two slot-`ends` sequences are merged by merge
//                              path, each merged item is one element (op of the two covering
//                              groups, repeated for the gap to the previous item; ties give an
//                              empty element), and the writer compacts the fills; no merged
//                              array, pair arrays or extra scans are materialized;
//   bm_op1_<op>_<flavor>       the same writer in one launch (decoupled look-back), and
//   bm_slots_pair_<flavor>     both operands' slot ends in one launch: the path of operations on
//                              short bitmaps, where launches and waits cost more than the data;
//   bm_fop_<op>_<flavor>       the same operations by tiles (the path of operands with at least
//                              a word per 6 groups): decode both operands' tile from their tile
//                              starts, operate, compress with the compressor's tile code (see
//                              "fused operations");
//   bm_overflow_fixup          its overflow path (a short list of blocks needing full fill_words);
//   bm_scatter_fills           the overflow path: block i's `ex` full fill_words and last word;
//   bm_overflow_fills          the same with the scan of ex, in one thread block (small results);
//   bm_count_ones_<flavor>     cardinality on the compressed words;
//   bm_plain_op                word-wise op on plain bitmaps (the decompress-operate baseline).
// The plain-array scans and the merge test kernel are in ../primitives/primitives.cu.
//
// Invariants: every writer or decoder input was validated (bm_slots_* + host check) or made
// by a writer; still, every global read is bounded by the lengths passed in.
#include "../include/common.cuh"
#include "../primitives/scan.cuh"
#include "../primitives/merge.cuh"
#include "wah.cuh"
#include "writer.cuh"
#include "slots.cuh"
#include "compress.cuh"
#include "convert.cuh"
#include "decompress.cuh"
#include "ops.cuh"
