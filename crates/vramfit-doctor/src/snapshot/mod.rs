//! PyTorch memory snapshot analysis (filled by the snapshot helper).
