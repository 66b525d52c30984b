"""Corrections to the team's GPU facts, engine-visible totals, and added GPUs.

DEV: engine-visible totals from real logs: id -> (value, "GiB"|"MiB", source).
FIX: per team id, fields replaced (name as the driver prints it, aliases, corrections).
ADDED: GPUs the team file lacks; `_class` picks the estimate rule (see build_gpus.py).
"""

DL = "../shared/data/dev/"
DEV = {
    "a100-sxm-80gb": (79.25, "GiB", "vLLM total_gpu_memory 79.25 GiB on an A100 80GB (" + DL +
                      "vllm_logs.dev.jsonl vllm-log-005; also PyTorch 'total capacity of 79.25 GiB' "
                      "on HF a100-large, code-index id 66548677846); nvidia-smi shows 81920 MiB"),
    "h100-sxm": (79.19, "GiB", "vLLM/PyTorch totals seen on 80 GB Hopper/Ampere cards range 79.11-79.33 "
                 "GiB (code-index ids 58521895018, 12053131581; " + DL + "vllm_logs.dev.jsonl "
                 "vllm-log-022 79.33); 79.19 GiB is the project's working value; nvidia-smi 81559 MiB"),
    "a10g": (22.06, "GiB", "PyTorch 'total capacity of 22.06 GiB' on AWS g5.2xlarge A10G (" + DL +
             "vllm_logs.dev.jsonl vllm-log-050); nvidia-smi 23028 MiB"),
    "rtx-pro-6000-blackwell": (97887, "MiB", "vLLM 95.59 GiB = nvidia-smi 97887 MiB (" + DL +
                               "vllm_logs.dev.jsonl vllm-log-027)"),
    "rtx-5090": (32607, "MiB", "vLLM 31.84 GiB (" + DL + "vllm_logs.dev.jsonl vllm-log-006) = nvidia-smi 32607 MiB"),
    "l40s": (46068, "MiB", "vLLM 44.99 GiB with nvidia-smi 46068 MiB (" + DL + "vllm_logs.dev.jsonl vllm-log-012)"),
    "rtx-3090": (24576, "MiB", "nvidia-smi 24576 MiB; llama.cpp memory breakdown total 24575 MiB (" + DL +
                 "llamacpp_logs.dev.jsonl issue_llamacpp20153_fit_qwen35_27b_q8_0_2x3090)"),
    "rtx-3070": (8192, "MiB", "llama.cpp total 8192 MiB (" + DL + "llamacpp_logs.dev.jsonl "
                 "code_llama3_8b_korean_bllossom_q4km_rtx3070_ctx512)"),
    "gtx-1080-ti": (11165, "MiB", "llama.cpp memory breakdown total 11165 MiB (" + DL + "llamacpp_logs.dev.jsonl "
                    "issue_llamacpp19437_breakdown_gtx1080ti_qwen3codernext)"),
    "dgx-spark-gb10": (121.7, "GiB", "vLLM on GB10 sees about 121.7 GiB of the 128 GB (" + DL +
                       "vllm_logs.dev.jsonl vllm-log-033 notes)"),
}

CUDA_GPUS = "https://developer.nvidia.com/cuda-gpus (compute capability)"

FIX = {
    "rtx-3060-12gb": {"name": "NVIDIA GeForce RTX 3060", "aliases": ["RTX 3060 12GB"]},
    "rtx-4060-ti-8gb": {"name": "NVIDIA GeForce RTX 4060 Ti", "aliases": ["RTX 4060 Ti 8GB"],
                        "notes": "The driver prints the same name for the 8 GB and 16 GB cards; a bare "
                                 "'4060 Ti' resolves to the 16 GB entry (listed first)."},
    "rtx-4060-ti-16gb": {"name": "NVIDIA GeForce RTX 4060 Ti", "aliases": ["RTX 4060 Ti 16GB", "RTX 4060 Ti"]},
    "rtx-5060-ti-16gb": {"name": "NVIDIA GeForce RTX 5060 Ti", "aliases": ["RTX 5060 Ti 16GB"]},
    "rtx-3080-10gb": {"name": "NVIDIA GeForce RTX 3080", "aliases": ["RTX 3080 10GB"]},
    "rtx-pro-6000-blackwell": {"name": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                               "aliases": ["RTX PRO 6000 Blackwell", "RTX PRO 6000", "RTX 6000 Pro"],
                               "notes": "Workstation Edition (600 W). The Server Edition is its own entry."},
    "t4": {"name": "Tesla T4", "aliases": ["NVIDIA T4", "T4 16GB"]},
    "v100-sxm2-16gb": {"name": "Tesla V100-SXM2-16GB", "aliases": ["V100", "V100 16GB", "V100-16G", "V100 SXM2 16GB"],
                       "notes": "A bare 'V100' means this card (AWS p3). " },
    "v100-sxm2-32gb": {"name": "Tesla V100-SXM2-32GB", "aliases": ["V100 32GB", "V100-32G", "V100 SXM2 32GB"]},
    "a10g": {"name": "NVIDIA A10G", "aliases": ["A10G 24GB"]},
    "a100-pcie-40gb": {"name": "NVIDIA A100-PCIE-40GB", "aliases": ["A100 40GB PCIe", "A100 PCIe 40GB"]},
    "a100-sxm-40gb": {"name": "NVIDIA A100-SXM4-40GB", "aliases": ["A100 40GB", "A100-40G", "A100 SXM 40GB"]},
    "a100-pcie-80gb": {"name": "NVIDIA A100 80GB PCIe", "aliases": ["A100 PCIe 80GB", "A100 PCIe"],
                       "nvidia_smi_total_mib": 81920,
                       "_mem_est": (79.25, "GiB", "estimated: the engine-visible total of the A100-SXM4-80GB "
                                    "(same 81920 MiB in nvidia-smi)")},
    "a100-sxm-80gb": {"name": "NVIDIA A100-SXM4-80GB",
                      "aliases": ["A100", "A100 80GB", "A100-80G", "A100 SXM", "A100 SXM4 80GB", "A100 SXM 80GB"],
                      "notes": "A bare 'A100' means this card, the most common cloud variant (AWS p4de, "
                               "Azure ND A100 v4, GCP a2-ultragpu)."},
    "h100-pcie": {"name": "NVIDIA H100 PCIe", "aliases": ["H100 PCIe 80GB"],
                  "_mem_est": (79.19, "GiB", "estimated: the engine-visible total used for the H100 SXM5 "
                               "(same 81559 MiB in nvidia-smi)")},
    "h100-sxm": {"name": "NVIDIA H100 80GB HBM3",
                 "aliases": ["H100", "H100 80GB", "H100 SXM", "H100 SXM5", "H100-SXM-80GB", "H100-80G"],
                 "notes": "A bare 'H100' means the SXM5 card (AWS p5, Azure ND H100 v5)."},
    "h100-nvl": {"name": "NVIDIA H100 NVL", "aliases": ["H100 94GB", "H100 NVL 94GB"]},
    "h200": {"name": "NVIDIA H200", "aliases": ["H200 141GB", "H200 SXM", "H200 NVL"]},
    "gh200-96gb": {"name": "NVIDIA GH200 480GB", "_class": "hbm", "aliases": ["GH200", "GH200 96GB"],
                   "notes": "The driver names the superchip by its combined memory; the GPU has 96 GB HBM3. "
                            "A 144 GB HBM3e variant exists (not listed)."},
    "b200": {"name": "NVIDIA B200", "aliases": ["B200 180GB"],
             "notes": "nvidia-smi 183359 MiB; the AWS p6-b200 DRA table lists 182784Mi (code-index id 59571545358)."},
    "b300": {"name": "NVIDIA B300", "_class": "hbm"},
    "a30": {"name": "NVIDIA A30", "_class": "hbm"},
    "intel-arc-a770-16gb": {"name": "Intel(R) Arc(TM) A770 Graphics", "aliases": ["Arc A770", "Intel Arc A770 16GB"]},
    "intel-arc-b580": {"name": "Intel(R) Arc(TM) B580 Graphics", "aliases": ["Arc B580", "Intel Arc B580"]},
    "mi250": {"name": "AMD Instinct MI250", "memory_marketing_gb": 64, "bandwidth_gbps": 1638.4,
              "notes": "One MI250 module is two GCDs that software sees as two 64 GB devices; this entry is "
                       "one device (module: 128 GB, 3.28 TB/s)."},
    "mi250x": {"name": "AMD Instinct MI250X", "aliases": ["AMD Instinct MI250X/MI250"],
               "memory_marketing_gb": 64, "bandwidth_gbps": 1638.4,
               "notes": "One MI250X module is two GCDs that software sees as two 64 GB devices; this entry is "
                        "one device (module: 128 GB, 3.28 TB/s)."},
    "mi300x": {"_mem_est": (191.98, "GiB", "rocm-smi total as collected in the team's GPU facts "
                            "(../shared/data/catalog/gpu_catalog.jsonl reported_total_gib)"), "_mem_measured": True,
               "notes": "FP8 is OCP e4m3fnuz/e5m2fnuz on gfx942. rocm-smi total 191.98 GiB."},
    "apple-m3-max": {"notes": "128 GB configuration (36/48/64/96/128 GB exist); the binned 30-core-GPU "
                              "part has 300 GB/s. Metal lets the GPU wire about 3/4 of memory by default."},
}

for _id in ("apple-m1", "apple-m1-pro", "apple-m1-max", "apple-m1-ultra", "apple-m2", "apple-m2-pro",
            "apple-m2-max", "apple-m2-ultra", "apple-m3", "apple-m3-pro", "apple-m3-ultra", "apple-m4",
            "apple-m4-pro", "apple-m4-max"):
    FIX.setdefault(_id, {})["notes"] = (
        "Largest memory configuration. Metal lets the GPU wire only part of unified memory by default "
        "(recommendedMaxWorkingSetSize, about 2/3 to 3/4; sysctl iogpu.wired_limit_mb raises it).")


def nv(id, name, gb, bw, cc, klass, src, aliases=(), after=None, bf16=None, fp8=None, fp4=None, notes="",
       unified=False):
    major = float(cc)
    return {"id": id, "name": name, "aliases": list(aliases), "vendor": "NVIDIA", "memory_marketing_gb": gb,
            "bandwidth_gbps": bw, "compute_capability": cc, "unified_memory": unified,
            "bf16": major >= 8.0 if bf16 is None else bf16,
            "fp8": (major >= 8.9 and cc != "8.7") if fp8 is None else fp8,
            "fp4": major >= 10.0 if fp4 is None else fp4,
            "sources": [CUDA_GPUS, src], "notes": notes, "_class": klass, "_after": after}


GF = "NVIDIA GeForce product specifications (memory size, bandwidth)"
LAP = "NVIDIA GeForce laptop GPU specifications (memory size and bus width)"
WS = "NVIDIA RTX professional GPU datasheets (memory, bandwidth)"
DC = "NVIDIA data-center GPU datasheets (memory, bandwidth)"
ADDED = [
    nv("gtx-1070", "NVIDIA GeForce GTX 1070", 8, 256, "6.1", "gddr", GF, after=None),
    nv("gtx-1080", "NVIDIA GeForce GTX 1080", 8, 320, "6.1", "gddr", GF, after="gtx-1070"),
    nv("gtx-1080-ti", "NVIDIA GeForce GTX 1080 Ti", 11, 484, "6.1", "gddr", GF, after="gtx-1080"),
    nv("rtx-2080", "NVIDIA GeForce RTX 2080", 8, 448, "7.5", "gddr", GF, after="rtx-2070"),
    nv("gtx-1660-super", "NVIDIA GeForce GTX 1660 SUPER", 6, 336, "7.5", "gddr", GF, after="gtx-1080-ti"),
    nv("titan-rtx", "NVIDIA TITAN RTX", 24, 672, "7.5", "gddr", GF, after="rtx-2080-ti"),
    nv("quadro-rtx-8000", "Quadro RTX 8000", 48, 672, "7.5", "gddr", WS, ["RTX 8000"], after="titan-rtx"),
    nv("rtx-3050", "NVIDIA GeForce RTX 3050", 8, 224, "8.6", "gddr", GF, after="quadro-rtx-8000"),
    nv("rtx-3080-12gb", "NVIDIA GeForce RTX 3080 12GB", 12, 912, "8.6", "gddr", GF, ["RTX 3080 12GB"],
       after="rtx-3080-10gb", notes="The driver may print the name without '12GB'."),
    nv("rtx-4060-laptop", "NVIDIA GeForce RTX 4060 Laptop GPU", 8, 256, "8.9", "gddr", LAP, after="rtx-4090"),
    nv("rtx-4070-laptop", "NVIDIA GeForce RTX 4070 Laptop GPU", 8, 256, "8.9", "gddr", LAP, after="rtx-4060-laptop"),
    nv("rtx-4080-laptop", "NVIDIA GeForce RTX 4080 Laptop GPU", 12, 432, "8.9", "gddr", LAP, after="rtx-4070-laptop"),
    nv("rtx-4090-laptop", "NVIDIA GeForce RTX 4090 Laptop GPU", 16, 576, "8.9", "gddr", LAP, after="rtx-4080-laptop"),
    nv("rtx-5090-laptop", "NVIDIA GeForce RTX 5090 Laptop GPU", 24, 896, "12.0", "gddr", LAP, after="rtx-5090"),
    nv("rtx-a2000-12gb", "NVIDIA RTX A2000 12GB", 12, 288, "8.6", "gddr", WS, ["RTX A2000"], after="rtx-5090-laptop"),
    nv("rtx-a4500", "NVIDIA RTX A4500", 20, 640, "8.6", "gddr", WS, after="rtx-a4000"),
    nv("rtx-4000-ada", "NVIDIA RTX 4000 Ada Generation", 20, 360, "8.9", "gddr", WS, after="rtx-a6000"),
    nv("rtx-5000-ada", "NVIDIA RTX 5000 Ada Generation", 32, 576, "8.9", "gddr", WS, after="rtx-4000-ada"),
    nv("rtx-pro-6000-blackwell-server", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 96, 1597, "12.0", "gddr",
       WS, ["RTX PRO 6000 Server"], after="rtx-pro-6000-blackwell",
       notes="Same 96 GB as the Workstation Edition; passively cooled, lower clocks."),
    nv("p40", "Tesla P40", 24, 346, "6.1", "gddr_ecc", DC, ["P40"], after="t4", notes="No fast FP16/BF16 math."),
    nv("p100-pcie-16gb", "Tesla P100-PCIE-16GB", 16, 732, "6.0", "hbm", DC, ["P100"], after="p40"),
    {**nv("v100-pcie-16gb", "Tesla V100-PCIE-16GB", 16, 900, "7.0", "hbm", DC, ["V100 PCIe 16GB"],
          after="v100-sxm2-32gb",
          notes="A llama.cpp CI log shows 15841 MiB free at load (../shared/data/dev/llamacpp_logs.dev.jsonl)."),
     "nvidia_smi_total_mib": 16160,
     "sources": [CUDA_GPUS, DC, "team GPU facts: 'PCIe 16GB also 16160MiB' (nvidia-smi copies)"]},
    nv("v100-pcie-32gb", "Tesla V100-PCIE-32GB", 32, 900, "7.0", "hbm", DC, ["V100 PCIe 32GB"], after="v100-pcie-16gb"),
    nv("a16", "NVIDIA A16", 16, 200, "8.6", "gddr_ecc", DC, after="a10g",
       notes="One A16 board carries four GPUs of 16 GB; this entry is one GPU."),
    nv("l20", "NVIDIA L20", 48, 864, "8.9", "gddr_ecc", DC, after="l4"),
    nv("a800-sxm4-80gb", "NVIDIA A800-SXM4-80GB", 80, 2039, "8.0", "hbm", DC, ["A800", "A800 80GB"],
       after="a100-sxm-80gb", notes="Export variant of the A100 80GB (NVLink limited to 400 GB/s)."),
    nv("h800", "NVIDIA H800", 80, 3350, "9.0", "hbm", DC, ["H800 80GB", "H800 SXM"], after="h100-nvl"),
    nv("h20", "NVIDIA H20", 96, 4000, "9.0", "hbm", DC, ["H20 96GB"], after="h200"),
    nv("gb200", "NVIDIA GB200", 186, 8000, "10.0", "hbm", DC, ["GB200 NVL72"], after="b300",
       notes="One Blackwell GPU of a GB200 superchip (NVL72: 13.4 TB HBM3e over 72 GPUs)."),
    nv("dgx-spark-gb10", "NVIDIA GB10", 128, 273, "12.1", "unified", "NVIDIA DGX Spark specifications",
       ["DGX Spark", "GB10"], after="gb200", unified=True,
       notes="128 GB LPDDR5x shared with the CPU; vLLM counts available system memory as free."),
    nv("jetson-agx-orin-64gb", "Orin", 64, 204.8, "8.7", "unified", "NVIDIA Jetson AGX Orin specifications",
       ["Jetson AGX Orin", "Jetson AGX Orin 64GB", "AGX Orin"], after="dgx-spark-gb10", unified=True, fp8=False,
       notes="64 GB LPDDR5 shared with the CPU."),
    nv("jetson-agx-thor", "NVIDIA Thor", 128, 273, "11.0", "unified", "NVIDIA Jetson AGX Thor specifications",
       ["Jetson AGX Thor", "Jetson Thor", "AGX Thor"], after="jetson-agx-orin-64gb", unified=True, fp8=True,
       fp4=True, notes="128 GB LPDDR5x shared with the CPU. Compute capability 11.0 (10.1 before CUDA 13)."),
]


def amd(id, name, gb, bw, gfx, src, aliases=(), after=None, fp8=False, fp4=False, notes=""):
    return {"id": id, "name": name, "aliases": list(aliases), "vendor": "AMD", "memory_marketing_gb": gb,
            "bandwidth_gbps": bw, "compute_capability": gfx, "bf16": True, "fp8": fp8, "fp4": fp4,
            "sources": ["github:ROCm/ROCm/docs/reference/gpu-arch-specs.rst (VRAM, LLVM target)", src],
            "notes": notes, "_class": "unified", "_after": after}


ADDED += [
    amd("mi355x", "AMD Instinct MI355X", 288, 8000, "gfx950", "AMD Instinct MI355X datasheet", ["MI355X"],
        after="mi325x", fp8=True, fp4=True),
    amd("rx-7800-xt", "AMD Radeon RX 7800 XT", 16, 624, "gfx1101", "AMD Radeon RX 7800 XT specifications",
        after="rx-7900-xtx"),
    amd("rx-7900-xt", "AMD Radeon RX 7900 XT", 20, 800, "gfx1100", "AMD Radeon RX 7900 XT specifications",
        after="rx-7900-xtx"),
    amd("rx-9070-xt", "AMD Radeon RX 9070 XT", 16, 640, "gfx1201", "AMD Radeon RX 9070 XT specifications",
        after="radeon-pro-w7900", fp8=True),
]
