"""What the nvCOMP peer scripts share: the GPU modules (imported on demand, so that --help needs
no GPU), median timing with CUDA events, and the device's name for the log."""
import statistics


def gpu_modules():
    """(cupy, numpy, nvidia.nvcomp), imported now."""
    import cupy
    import numpy
    from nvidia import nvcomp
    return cupy, numpy, nvcomp


def timed(fn, stream, runs):
    """Median ms of fn() over runs, after a warm-up, with CUDA events on stream."""
    import cupy as cp
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    fn()
    stream.synchronize()
    times = []
    for _ in range(runs):
        start.record(stream)
        fn()
        stop.record(stream)
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def device_name():
    """The name of CUDA device 0."""
    import cupy as cp
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"]
    return dev.decode() if isinstance(dev, bytes) else dev
