//! Re-encoding in the other flavor (Algorithm 6, `kernels/bitmap/convert.cuh`) through the
//! canonical writer.

use tessera_codecs::bitmap::{Bitmap, Flavor};
use tessera_format::Result;

use super::writer::{run_writer, WriterRun};
use super::{download, upload, upload_payload, DeviceBitmap};
use crate::runtime::Gpu;

/// Re-encodes in `to`, canonically (`plwah::convert`; PLWAH to WAH is Algorithm 6).
pub fn convert_device(gpu: &Gpu, d: &DeviceBitmap, to: Flavor) -> Result<DeviceBitmap> {
    let (reduce, apply) = match (d.flavor, to) {
        (Flavor::Plwah, Flavor::Wah) => (
            "bm_convert_reduce_plwah_to_wah",
            "bm_convert_apply_plwah_to_wah",
        ),
        (Flavor::Wah, Flavor::Plwah) => (
            "bm_convert_reduce_wah_to_plwah",
            "bm_convert_apply_wah_to_plwah",
        ),
        _ => {
            // Same flavor: the canonical re-encoding is the op-free writer over the slots of a
            // stream, which the conversions are; go through the other flavor's reader.
            let tmp = convert_device(gpu, d, other(to))?;
            return convert_device(gpu, &tmp, to);
        }
    };
    let pw = gpu.ptr(&d.words);
    let n = d.slots();
    run_writer(
        gpu,
        WriterRun {
            flavor: to,
            bit_len: d.bit_len,
            elements: n,
            reduce,
            apply,
            src: vec![&pw, &n],
            max_counter: to.max_counter() as u32,
        },
    )
}

fn other(f: Flavor) -> Flavor {
    match f {
        Flavor::Wah => Flavor::Plwah,
        Flavor::Plwah => Flavor::Wah,
    }
}

/// [`convert_device`] for a CPU bitmap.
pub fn convert(gpu: &Gpu, b: &Bitmap, to: Flavor) -> Result<Bitmap> {
    download(gpu, &convert_device(gpu, &upload(gpu, b)?, to)?)
}

/// PLWAH payload in, WAH payload out (`plwah::to_wah`), validating the input.
pub fn to_wah(gpu: &Gpu, plwah_payload: &[u8]) -> Result<Vec<u8>> {
    let d = upload_payload(gpu, Flavor::Plwah, plwah_payload)?;
    Ok(download(gpu, &convert_device(gpu, &d, Flavor::Wah)?)?.to_payload())
}
