//! scx_floor: attaches floor.bpf.c until SIGINT or SIGTERM, then reports
//! how it ended. A baseline for bench/run.sh, not a scheduler to run.

mod bpf_skel {
    include!(concat!(env!("OUT_DIR"), "/bpf_skel.rs"));
}

use std::mem::MaybeUninit;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use bpf_skel::BpfSkelBuilder;
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};
use signal_hook::consts::{SIGINT, SIGTERM};

fn main() -> Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("signal handler")?;
    }
    let mut open_object = MaybeUninit::uninit();
    let builder = BpfSkelBuilder::default();
    let mut skel = scx_ops_open!(builder, &mut open_object, floor_ops, None)?;
    let mut skel = scx_ops_load!(skel, floor_ops, uei)?;
    let link = scx_ops_attach!(skel, floor_ops)?;
    eprintln!("scx_floor attached");
    while !stop.load(Ordering::Relaxed) && !uei_exited!(&skel, uei) {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(link);
    let exit = uei_report!(&skel, uei)?;
    eprintln!("scx_floor detached: {exit:?}");
    Ok(())
}
