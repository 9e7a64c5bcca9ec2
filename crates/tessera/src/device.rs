//! Where decoding runs: [`Device`] is what a caller asks for, [`Engine`] the opened device with
//! its CPU fallback.

use std::time::{Duration, Instant};

use tessera_codecs::bitmap::ops::{self, Op};
use tessera_codecs::bitmap::Bitmap;
use tessera_format::{Error, Result};
use tessera_gpu::Gpu;

/// The device a caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Device {
    /// The GPU when one can be opened, else the CPU; a GPU failure during work (not a data
    /// error) moves the rest of the work to the CPU.
    #[default]
    Auto,
    /// The CPU, all cores.
    Cpu,
    /// The GPU; opening fails when there is none, and GPU failures are errors.
    Gpu,
}

impl Device {
    /// `auto`, `cpu` or `gpu`.
    pub fn name(self) -> &'static str {
        match self {
            Device::Auto => "auto",
            Device::Cpu => "cpu",
            Device::Gpu => "gpu",
        }
    }
}

impl std::str::FromStr for Device {
    type Err = Error;
    fn from_str(s: &str) -> Result<Device> {
        match s {
            "auto" => Ok(Device::Auto),
            "cpu" => Ok(Device::Cpu),
            "gpu" => Ok(Device::Gpu),
            other => Err(Error::InvalidArgument(format!(
                "unknown device '{other}' (auto, cpu or gpu)"
            ))),
        }
    }
}

/// An opened device: the GPU, or the CPU with the reason the GPU is not used.
///
/// Every read of a [`crate::TableReader`] takes an engine, so one GPU context (and its compiled
/// kernels) serves a whole program.
#[derive(Debug)]
pub struct Engine {
    gpu: Option<Gpu>,
    /// Under [`Device::Auto`], a GPU failure (not a data error) switches to the CPU.
    may_fall_back: bool,
    /// Why (some) work runs on the CPU, for [`Engine::report`].
    note: Option<String>,
}

/// The message inside an [`Error::Gpu`], or the whole error.
fn gpu_reason(e: &Error) -> String {
    match e {
        Error::Gpu(m) => m.clone(),
        other => other.to_string(),
    }
}

impl Engine {
    /// Opens what `device` asks for. [`Device::Gpu`] fails when no GPU can be opened;
    /// [`Device::Auto`] then uses the CPU and [`Engine::report`] says why.
    pub fn open(device: Device) -> Result<Engine> {
        match device {
            Device::Cpu => Ok(Engine::cpu()),
            Device::Gpu => Ok(Engine {
                gpu: Some(Gpu::new()?),
                may_fall_back: false,
                note: None,
            }),
            Device::Auto => match Gpu::new() {
                Ok(g) => Ok(Engine {
                    gpu: Some(g),
                    may_fall_back: true,
                    note: None,
                }),
                Err(e) => Ok(Engine {
                    gpu: None,
                    may_fall_back: false,
                    note: Some(format!("GPU unavailable: {}", gpu_reason(&e))),
                }),
            },
        }
    }

    /// The CPU only.
    pub fn cpu() -> Engine {
        Engine {
            gpu: None,
            may_fall_back: false,
            note: None,
        }
    }

    /// The GPU, when work goes there.
    pub fn gpu(&self) -> Option<&Gpu> {
        self.gpu.as_ref()
    }

    /// `"gpu"` or `"cpu"`: where the next work runs.
    pub fn device_name(&self) -> &'static str {
        if self.gpu.is_some() {
            "gpu"
        } else {
            "cpu"
        }
    }

    /// One line naming the device: `gpu (NVIDIA H100 80GB HBM3, 132 SMs)`, or
    /// `cpu (2 threads; GPU unavailable: ...)`.
    pub fn describe(&self) -> String {
        match &self.gpu {
            Some(g) => {
                let i = g.info();
                let mut s = format!("gpu ({}, {} SMs, {})", i.name, i.sm_count, i.arch);
                if let Some(n) = &self.note {
                    s.push_str(&format!("; {n}"));
                }
                s
            }
            None => {
                let threads = rayon::current_num_threads();
                match &self.note {
                    Some(n) => format!("cpu ({threads} threads; {n})"),
                    None => format!("cpu ({threads} threads)"),
                }
            }
        }
    }

    /// The one-line device report: `device: cpu (GPU unavailable: ...)`.
    pub fn report(&self) -> String {
        match &self.note {
            Some(n) => format!("device: {} ({n})", self.device_name()),
            None => format!("device: {}", self.device_name()),
        }
    }

    /// Does the one-time GPU setup now (kernel compilation, first launches) so that later work
    /// is timed without it; returns how long it took (zero on the CPU).
    pub fn warm_up(&self) -> Result<Duration> {
        let t = Instant::now();
        if let Some(g) = &self.gpu {
            g.warm_up()?;
        }
        Ok(t.elapsed())
    }

    /// `op(a, b)` on compressed bitmaps, on the GPU when there is one, else on the CPU; the
    /// result is the same canonical bitmap either way.
    pub fn bitmap_op(&self, op: Op, a: &Bitmap, b: &Bitmap) -> Result<Bitmap> {
        match &self.gpu {
            Some(g) => tessera_gpu::bitmap::binary(g, op, a, b),
            None => ops::binary(op, a, b),
        }
    }

    /// Handles an error of GPU work: under [`Device::Auto`] a device failure drops the GPU
    /// (`Ok`: redo the work on the CPU); any other error is returned.
    pub(crate) fn gpu_failed(&mut self, e: Error) -> Result<()> {
        match e {
            Error::Gpu(m) if self.may_fall_back => {
                self.gpu = None;
                self.note = Some(format!("GPU failed, fell back to the CPU: {m}"));
                Ok(())
            }
            other => Err(other),
        }
    }
}
