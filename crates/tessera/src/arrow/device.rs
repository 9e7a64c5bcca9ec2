//! A field decoded on the GPU exported through the Arrow C Device Data Interface
//! (<https://arrow.apache.org/docs/format/CDeviceDataInterface.html>): an [`ArrowDeviceArray`]
//! whose buffers are CUDA device addresses, and the field's [`ArrowSchema`] (arrow-rs's
//! `FFI_ArrowSchema`, the C Data Interface's struct). Any consumer of the interface (cuDF,
//! CuPy through nanoarrow, another process's Arrow library) takes the buffers without a copy.
//!
//! The structs are `repr(C)` exactly as the specification's C declarations. Ownership follows
//! the interface's release protocol: the consumer calls `array.release` once, which frees the
//! device buffers this array owns (and its dictionary, unless the consumer moved that out) and
//! marks the struct released by setting `release` to null. Dropping an unreleased array in
//! Rust releases it too. The export waits for the GPU's queued work before it returns, so
//! `sync_event` is null: the buffers are ready on any stream.

use std::any::Any;
use std::ffi::c_void;

use arrow_schema::{DataType, Field};
use tessera_format::{Error, Result};
use tessera_gpu::{arrow_layout, Gpu, GpuBuffer};

use super::gpu::GpuArrowArray;

pub use arrow_schema::ffi::FFI_ArrowSchema as ArrowSchema;

/// `ARROW_DEVICE_CUDA`: memory of a CUDA device, `device_id` its ordinal.
pub const ARROW_DEVICE_CUDA: i32 = 2;

/// `struct ArrowArray` of the Arrow C Data Interface.
#[repr(C)]
#[derive(Debug)]
pub struct ArrowArray {
    /// Rows.
    pub length: i64,
    /// Null rows, or -1 when not computed.
    pub null_count: i64,
    /// Rows to skip at the start of every buffer.
    pub offset: i64,
    /// Entries of `buffers`.
    pub n_buffers: i64,
    /// Entries of `children`.
    pub n_children: i64,
    /// The buffers' addresses (device addresses here; null for an absent validity bitmap).
    pub buffers: *mut *const c_void,
    /// Child arrays (none for the types exported here).
    pub children: *mut *mut ArrowArray,
    /// The dictionary's values, for dictionary-encoded arrays.
    pub dictionary: *mut ArrowArray,
    /// Frees what the array owns and sets itself to null; null once released.
    pub release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    /// The producer's data (the owned buffers).
    pub private_data: *mut c_void,
}

/// `struct ArrowDeviceArray` of the Arrow C Device Data Interface.
#[repr(C)]
#[derive(Debug)]
pub struct ArrowDeviceArray {
    /// The array, its buffers on the device.
    pub array: ArrowArray,
    /// The device ordinal.
    pub device_id: i64,
    /// `ArrowDeviceType`: [`ARROW_DEVICE_CUDA`].
    pub device_type: i32,
    /// An event to wait on before reading the buffers (`CUevent*`); null when they are ready.
    pub sync_event: *mut c_void,
    /// Reserved by the specification, zero.
    pub reserved: [i64; 3],
}

/// What an exported array owns: the buffer address table its `buffers` points to, its
/// children and the table of their addresses, its dictionary's struct, and whatever keeps the
/// device buffers alive. Dropped in field order on release: children and dictionary (each
/// released unless the consumer moved it out) before the owner.
struct Private {
    buffers: Vec<*const c_void>,
    /// Never pushed to once built: `child_ptrs` point into its buffer.
    children: Vec<ArrowArray>,
    child_ptrs: Vec<*mut ArrowArray>,
    dictionary: Option<Box<ArrowArray>>,
    _owner: Box<dyn Any>,
}

unsafe extern "C" fn release(array: *mut ArrowArray) {
    // SAFETY: the interface passes an array this module built (or a null pointer); its
    // private_data is the `Private` box leaked in `assemble`, freed only here, once, because
    // release is set to null afterwards.
    let Some(a) = (unsafe { array.as_mut() }) else {
        return;
    };
    if a.release.is_none() {
        return;
    }
    if !a.private_data.is_null() {
        // Dropping the children and the dictionary's box releases each one unless the
        // consumer moved it out (then its release is already null).
        drop(unsafe { Box::from_raw(a.private_data.cast::<Private>()) });
    }
    a.private_data = std::ptr::null_mut();
    a.release = None;
}

impl ArrowArray {
    /// Whether the array was released.
    pub fn is_released(&self) -> bool {
        self.release.is_none()
    }

    /// An array of `length` rows over `buffers` (addresses, 0 for an absent buffer), with
    /// `children` and `dictionary`, that owns `owner` until it is released: how a caller
    /// exports more arrays over buffers an [`export_device`]ed array holds (a view that keeps
    /// that array alive through `owner`, or a struct array whose children are such views: a
    /// record batch). The addresses are not checked: they must stay valid while `owner` lives.
    pub fn from_parts(
        length: i64,
        null_count: i64,
        buffers: &[u64],
        children: Vec<ArrowArray>,
        dictionary: Option<ArrowArray>,
        owner: Box<dyn Any + Send>,
    ) -> ArrowArray {
        assemble(length, null_count, buffers, children, dictionary, owner)
    }
}

impl Drop for ArrowArray {
    fn drop(&mut self) {
        if let Some(r) = self.release {
            // SAFETY: `self` is a live, unreleased array; release frees it once.
            unsafe { r(self) };
        }
    }
}

/// An array of `length` rows over device addresses `buffers`, owning `owner` (what keeps the
/// buffers alive) and `dictionary`.
fn assemble(
    length: i64,
    null_count: i64,
    buffers: &[u64],
    children: Vec<ArrowArray>,
    dictionary: Option<ArrowArray>,
    owner: Box<dyn Any>,
) -> ArrowArray {
    let mut p = Box::new(Private {
        buffers: buffers.iter().map(|&b| b as *const c_void).collect(),
        children,
        child_ptrs: Vec::new(),
        dictionary: dictionary.map(Box::new),
        _owner: owner,
    });
    p.child_ptrs = p
        .children
        .iter_mut()
        .map(|c| c as *mut ArrowArray)
        .collect();
    let n_children = p.child_ptrs.len() as i64;
    let children_ptr = if p.child_ptrs.is_empty() {
        std::ptr::null_mut()
    } else {
        p.child_ptrs.as_mut_ptr()
    };
    let buffers_ptr = p.buffers.as_mut_ptr();
    let dict_ptr = p
        .dictionary
        .as_mut()
        .map_or(std::ptr::null_mut(), |d| &mut **d as *mut ArrowArray);
    ArrowArray {
        length,
        null_count,
        offset: 0,
        n_buffers: buffers.len() as i64,
        n_children,
        buffers: buffers_ptr,
        children: children_ptr,
        dictionary: dict_ptr,
        release: Some(release),
        private_data: Box::into_raw(p).cast(),
    }
}

/// The device buffers of one exported array, kept alive until its release (a view keeps the
/// buffer it lies in alive with it, whatever the order the arrays sharing it are released in).
type Owned = (Option<GpuBuffer>, Option<GpuBuffer>, GpuBuffer);

fn export_array(gpu: &Gpu, a: GpuArrowArray) -> Result<ArrowArray> {
    let length = i64::try_from(a.len)
        .map_err(|_| Error::InvalidArgument(format!("{} rows exceed Arrow's i64", a.len)))?;
    let addr = |b: &Option<GpuBuffer>| {
        b.as_ref()
            .map_or(0, |b| arrow_layout::device_address(gpu, b))
    };
    let validity = addr(&a.validity);
    let values = arrow_layout::device_address(gpu, &a.values);
    let buffers: Vec<u64> = match &a.data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
            if a.offsets.is_none() {
                return Err(Error::InvalidArgument(format!(
                    "a {} array needs offsets",
                    a.data_type
                )));
            }
            vec![validity, addr(&a.offsets), values]
        }
        _ => vec![validity, values],
    };
    // Without a validity bitmap there are no nulls; with one, the count is left to consumers.
    let null_count = if a.validity.is_some() { -1 } else { 0 };
    let dictionary = a.dictionary.map(|d| export_array(gpu, *d)).transpose()?;
    let owner: Owned = (a.validity, a.offsets, a.values);
    Ok(assemble(
        length,
        null_count,
        &buffers,
        Vec::new(),
        dictionary,
        Box::new(owner),
    ))
}

/// Exports `array` (the field named `name`) on `gpu` as an Arrow C Device Data Interface
/// array and its schema; the array owns the device buffers from here on. Waits for the GPU's
/// queued work first, so `sync_event` is null.
pub fn export_device(
    gpu: &Gpu,
    array: GpuArrowArray,
    name: &str,
) -> Result<(ArrowDeviceArray, ArrowSchema)> {
    let field = Field::new(name, array.data_type.clone(), true);
    let schema = ArrowSchema::try_from(&field).map_err(|e| {
        super::arrow_err(&format!("field '{name}' has no C Data Interface schema"), e)
    })?;
    gpu.synchronize()?;
    let device_id = arrow_layout::device_ordinal(gpu) as i64;
    Ok((
        ArrowDeviceArray {
            array: export_array(gpu, array)?,
            device_id,
            device_type: ARROW_DEVICE_CUDA,
            sync_event: std::ptr::null_mut(),
            reserved: [0; 3],
        },
        schema,
    ))
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    /// The structs are the specification's: 64-bit fields and pointers in declaration order.
    #[test]
    fn layouts_match_the_specification() {
        assert_eq!(size_of::<ArrowArray>(), 80);
        assert_eq!(offset_of!(ArrowArray, buffers), 40);
        assert_eq!(offset_of!(ArrowArray, dictionary), 56);
        assert_eq!(offset_of!(ArrowArray, release), 64);
        assert_eq!(offset_of!(ArrowArray, private_data), 72);
        assert_eq!(size_of::<ArrowSchema>(), 72);
        assert_eq!(size_of::<ArrowDeviceArray>(), 128);
        assert_eq!(offset_of!(ArrowDeviceArray, device_id), 80);
        assert_eq!(offset_of!(ArrowDeviceArray, device_type), 88);
        assert_eq!(offset_of!(ArrowDeviceArray, sync_event), 96);
        assert_eq!(offset_of!(ArrowDeviceArray, reserved), 104);
    }

    /// Counts its drops (stands in for the device buffers).
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counted(n: &Arc<AtomicUsize>) -> Box<dyn Any> {
        Box::new(Counted(n.clone()))
    }

    #[test]
    fn release_frees_once_and_nulls_itself() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut a = assemble(3, 0, &[0, 0x1000], Vec::new(), None, counted(&drops));
        assert_eq!(a.n_buffers, 2);
        // SAFETY: the array's own buffer table, two entries.
        let b = unsafe { std::slice::from_raw_parts(a.buffers, 2) };
        assert_eq!(b, [std::ptr::null(), 0x1000 as *const c_void]);
        let r = a.release.expect("unreleased");
        // SAFETY: a live array built by `assemble`; the second call sees it released.
        unsafe {
            r(&mut a);
            r(&mut a);
        }
        assert!(a.is_released());
        assert!(a.private_data.is_null());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        drop(a);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn dictionaries_go_with_their_parent_unless_moved_out() {
        let drops = Arc::new(AtomicUsize::new(0));
        let dict = assemble(2, 0, &[0, 1, 2], Vec::new(), None, counted(&drops));
        let a = assemble(5, -1, &[8, 9], Vec::new(), Some(dict), counted(&drops));
        // SAFETY: `dictionary` points into the parent's private data, alive until release.
        assert_eq!(unsafe { (*a.dictionary).n_buffers }, 3);
        drop(a);
        assert_eq!(drops.load(Ordering::SeqCst), 2);

        // A consumer that moves the dictionary out takes over its release.
        let drops = Arc::new(AtomicUsize::new(0));
        let dict = assemble(2, 0, &[0, 1, 2], Vec::new(), None, counted(&drops));
        let mut a = assemble(5, -1, &[8, 9], Vec::new(), Some(dict), counted(&drops));
        // SAFETY: the move the interface describes: copy the struct, mark the source released.
        let moved = unsafe {
            let d = &mut *a.dictionary;
            let m = std::ptr::read(d);
            d.release = None;
            m
        };
        let r = a.release.expect("unreleased");
        // SAFETY: a live array built by `assemble`.
        unsafe { r(&mut a) };
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        drop(moved);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn schemas_carry_the_arrow_format() {
        let s = ArrowSchema::try_from(&Field::new("d", DataType::Decimal128(12, 2), true))
            .expect("schema");
        assert_eq!(s.format(), "d:12,2");
        let s = ArrowSchema::try_from(&Field::new(
            "k",
            DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::LargeUtf8)),
            true,
        ))
        .expect("schema");
        assert_eq!(s.format(), "s");
        assert_eq!(s.dictionary().map(|d| d.format()), Some("U"));
    }
}
