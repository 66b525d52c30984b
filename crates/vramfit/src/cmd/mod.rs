//! One module per subcommand. Each exposes `Args` (clap) and `run(Args) -> CmdResult`.

pub mod calibrate;
pub mod catalog;
pub mod check;
pub mod doctor;
pub mod doctor_recheck;
pub mod extras;
pub mod fit;
pub mod fit_render;
pub mod from_log;
pub mod inspect;
pub mod probe;
pub mod python;
pub mod run;
pub mod snapshot;
pub mod stress;
pub mod table;
pub mod watch;

/// The line that says `--gpu` alone was taken as an idle GPU, naming the tool that reads free
/// memory on that machine: `nvidia-smi`; `rocm-smi --showmeminfo vram` on AMD; `free -m` on a
/// unified-memory machine other than a Mac (DGX Spark's nvidia-smi prints "Not Supported" for
/// memory). `None` for a Mac: its limit is Metal's working set, said in its own note.
pub fn idle_assumption(hw: &vramfit_engine::Hardware) -> Option<String> {
    use vramfit_engine::hardware::is_apple;
    if hw.gpus.iter().any(is_apple) {
        return None;
    }
    let (what, tool) = if hw.gpus.iter().any(|g| g.unified) {
        (
            "nothing else holding the unified memory",
            "the available MiB of `free -m`",
        )
    } else if hw.gpus.iter().any(|g| g.name.starts_with("AMD ")) {
        (
            "an idle headless GPU",
            "rocm-smi --showmeminfo vram's free MiB",
        )
    } else {
        ("an idle headless GPU", "nvidia-smi's free MiB")
    };
    Some(format!(
        "assumed: {what} (all memory free); on a desktop or a shared GPU give --gpu-free with {tool}"
    ))
}
