//! Byte frequencies on the device: per strip (the encoder's input) and per chunk.

use cudarc::driver::CudaSlice;
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use super::{ENC_THREADS, STRIP_BYTES};
use crate::kernels::Module;
use crate::runtime::Gpu;

/// Launches the histogram over `n` bytes of `data`: per strip (when `strip_hist` is given) and
/// per chunk of `chunk_bytes` into `chunk_hist` (zeroed here).
pub(super) fn launch_histogram(
    gpu: &Gpu,
    data: &CudaSlice<u8>,
    n: usize,
    chunk_bytes: usize,
    strip_hist: Option<&CudaSlice<u32>>,
    chunk_hist: &mut CudaSlice<u32>,
) -> Result<()> {
    gpu.fill_bytes(chunk_hist, 0)?;
    let strips = n.div_ceil(STRIP_BYTES);
    if strips == 0 {
        return Ok(());
    }
    let f = gpu.function(Module::Huffman, "huff_histogram")?;
    let (d, n64, spc) = (gpu.ptr(data), n as u64, (chunk_bytes / STRIP_BYTES) as u32);
    let sh = strip_hist.map_or(0u64, |b| gpu.ptr(b));
    let ch = gpu.ptr(chunk_hist);
    // SAFETY: matches huff_histogram(data, n, strips_per_chunk, strip_hist, chunk_hist); `data`
    // holds n bytes; strip_hist (when given) 256 words per strip; chunk_hist 256 per chunk of
    // the column (the callers size both from n and chunk_bytes).
    unsafe { gpu.launch(&f, strips as u32, ENC_THREADS, &[&d, &n64, &spc, &sh, &ch]) }
}

/// Byte frequencies of the first `n` bytes of `data` on the device, equal to
/// [`tessera_codecs::huffman::histogram`].
pub fn histogram_device(gpu: &Gpu, data: &CudaSlice<u8>, n: usize) -> Result<[u64; 256]> {
    if n > data.len() {
        return Err(Error::InvalidArgument(
            "histogram longer than the device buffer".into(),
        ));
    }
    let cb = MAX_CHUNK_VALUES as usize;
    let chunks = n.div_ceil(cb).max(1);
    let mut hist = gpu.alloc::<u32>(chunks * 256)?;
    launch_histogram(gpu, data, n, cb, None, &mut hist)?;
    let mut h = vec![0u32; chunks * 256];
    gpu.download(&hist, &mut h)?;
    let mut out = [0u64; 256];
    for part in h.chunks_exact(256) {
        for (o, &x) in out.iter_mut().zip(part) {
            *o += x as u64;
        }
    }
    Ok(out)
}

/// Byte frequencies of `data`, computed on the GPU.
pub fn histogram(gpu: &Gpu, data: &[u8]) -> Result<[u64; 256]> {
    let d = gpu.upload(data)?;
    histogram_device(gpu, &d, data.len())
}
