//! `--device`: the command-line form of [`tessera::Device`].

use tessera::{Device, Engine};

/// The device `--device` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceArg {
    /// The GPU when one can be opened, else the CPU.
    Auto,
    /// The CPU, chunks in parallel.
    Cpu,
    /// The GPU; fails when none can be opened.
    Gpu,
}

impl DeviceArg {
    /// The library's device.
    pub fn device(self) -> Device {
        match self {
            DeviceArg::Auto => Device::Auto,
            DeviceArg::Cpu => Device::Cpu,
            DeviceArg::Gpu => Device::Gpu,
        }
    }

    /// Opens the device (`gpu` fails without one; `auto` falls back to the CPU).
    pub fn open(self) -> tessera::Result<Engine> {
        Engine::open(self.device())
    }
}
