//! Device-wide primitives the codecs share (kernels in `kernels/primitives/`): the one
//! device-wide scan ([`scan`]) and the merge path (`kernels/primitives/merge.cuh`, used inside
//! the bitmap operations; [`merge`] holds its test entry point), and many device-to-device
//! copies in one launch ([`copy`]).

pub(crate) mod copy;
pub(crate) mod merge;
pub(crate) mod scan;
