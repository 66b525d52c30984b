//! Loading a model for an engine: the spec (and exact tensors when a header was read) through
//! `vramfit_model::resolve`, and the GGUF tensors llama.cpp will load for a quant name.
//! Shared by `vramfit check` and the solver so that both see the same bytes. [`Model`] is what
//! every planner takes: the resolved model, its download names and its GGUFs.

use crate::error::PlanError;
use crate::request::GGUF_LADDER;
use vramfit_model::resolve::{resolve, ResolveOptions, Resolved};
use vramfit_model::{layout, quant, GgmlType, WeightSet};
use vramfit_model::{ModelSpec, TensorDtype};

/// Resolve a model (local path, HF cache, catalog, Hub) with the environment's options. An
/// Ollama library name (`qwen3:30b`, `gpt-oss:20b`) is read through Ollama's tag table first,
/// so that `fit qwen3:30b` plans the model `ollama run qwen3:30b` pulls; an Ollama Cloud name
/// (`gpt-oss:120b-cloud`) is refused: it runs on Ollama's servers.
pub fn load(model: &str) -> Result<Resolved, PlanError> {
    let query = ollama_repo(model)?;
    resolve(
        query.as_deref().unwrap_or(model),
        &ResolveOptions::from_env(),
    )
    .map_err(|e| PlanError::Input(e.to_string()))
}

/// The HF repo behind an Ollama library name: an org-less `NAME:TAG` that is not a file.
fn ollama_repo(q: &str) -> Result<Option<String>, PlanError> {
    use vramfit_engine::ollama::tags;
    let t = q.trim();
    if t.contains('/') || !t.contains(':') || std::path::Path::new(t).exists() {
        return Ok(None);
    }
    if let Some(m) = tags::cloud_message(t) {
        return Err(PlanError::Input(m));
    }
    Ok(match tags::resolve(t) {
        Some(tags::OllamaModel::Library { repo, .. }) => Some(repo),
        _ => None,
    })
}

/// The GGUF tensors llama.cpp will load: read from the file, or predicted for the quant name
/// (`Resolved::gguf_quant`, Q4_K_M when none was named, as llama.cpp's `-hf` does).
pub fn gguf_weights(r: &Resolved) -> Result<WeightSet, PlanError> {
    if let Some(w) = &r.weights {
        if w.tensors
            .iter()
            .any(|t| matches!(t.dtype, vramfit_model::TensorDtype::Ggml(_)))
        {
            return Ok(w.clone());
        }
    }
    let qname = r.gguf_quant.clone().unwrap_or_else(|| "Q4_K_M".into());
    predicted_gguf(r, &qname)
}

/// The tensors of a GGUF of quant `qname` made from the model's full-precision layout.
pub fn predicted_gguf(r: &Resolved, qname: &str) -> Result<WeightSet, PlanError> {
    let mut v = predicted_ggufs(r, &[qname.to_string()])?;
    Ok(v.remove(0))
}

/// [`predicted_gguf`] for several quants, in order: the full-precision layout is synthesized
/// once per base type and the quants are predicted one thread each (llama-quantize's rules over
/// every tensor of a large MoE are the costly part). The first bad quant name is the error.
pub fn predicted_ggufs(r: &Resolved, qnames: &[String]) -> Result<Vec<WeightSet>, PlanError> {
    let parsed = qnames
        .iter()
        .map(|qname| {
            quant::FileType::parse(qname).ok_or_else(|| {
                PlanError::Input(format!(
                    "quant '{qname}' is not a llama.cpp quant name: use Q4_K_M, Q8_0, IQ4_XS, F16, ..."
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let base_of = |p: &quant::ParsedFileType| {
        if p.ftype.default_type() == GgmlType::BF16 {
            GgmlType::BF16
        } else {
            GgmlType::F16
        }
    };
    let mut full: Vec<(GgmlType, WeightSet)> = Vec::new();
    for p in &parsed {
        let base = base_of(p);
        if !full.iter().any(|(t, _)| *t == base) {
            full.push((base, layout::synthesize(&r.spec, base)));
        }
    }
    let full = &full;
    Ok(std::thread::scope(|scope| {
        let jobs: Vec<_> = parsed
            .iter()
            .zip(qnames)
            .map(|(p, qname)| {
                scope.spawn(move || {
                    let base = base_of(p);
                    let (_, set) = full.iter().find(|(t, _)| *t == base).expect("synthesized");
                    // community quants of i-quant types are made with an importance matrix
                    // (llama-quantize refuses most IQ types without one)
                    let imatrix = qname.to_ascii_uppercase().contains("IQ");
                    let mut w = quant::predict(set, &r.spec, p.ftype, imatrix);
                    let kept = experts_kept(&r.spec.id, &mut w);
                    w.source = format!(
                        "predicted {}{} from {}",
                        p.ftype.name(),
                        if kept { " with MXFP4 experts" } else { "" },
                        r.source
                    );
                    w
                })
            })
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("a quant prediction thread panicked"))
            .collect()
    }))
}

/// Published GGUFs of a model whose experts ship in MXFP4 (gpt-oss) keep them MXFP4 whatever
/// the tag: the tag quantizes the other tensors only (bartowski's and unsloth's gpt-oss repos,
/// evidence in catalog/gguf_repos.json `experts`; unsloth's gpt-oss-120b files span 58.3 GB at
/// Q2_K to 60.9 GB at F16). The stacked expert tensors (3-D) of the prediction become MXFP4;
/// true when any did.
fn experts_kept(id: &str, w: &mut WeightSet) -> bool {
    use vramfit_model::catalog::{find_model, gguf_repos};
    let Some(m) = find_model(id) else {
        return false;
    };
    let mxfp4 = gguf_repos::repos_of(&m.id)
        .iter()
        .any(|r| r.experts.as_deref() == Some("MXFP4"));
    if !mxfp4 {
        return false;
    }
    let mut any = false;
    for t in w.tensors.iter_mut() {
        let stacked = t.dims.len() == 3 && t.dims[2] > 1;
        if stacked && t.dtype != TensorDtype::Ggml(GgmlType::MXFP4) {
            if let Some(b) = GgmlType::MXFP4.tensor_bytes(&t.dims) {
                t.dtype = TensorDtype::Ggml(GgmlType::MXFP4);
                t.bytes = b;
                any = true;
            }
        }
    }
    any
}

/// A resolved model with the GGUFs to try.
pub struct Model {
    pub resolved: Resolved,
    /// the query, for the commands (`ORG/NAME`, or a local path)
    pub query: String,
}

impl Model {
    pub fn load(query: &str) -> Result<Model, PlanError> {
        Ok(Model {
            resolved: load(query)?,
            query: query.to_string(),
        })
    }

    pub fn spec(&self) -> &ModelSpec {
        &self.resolved.spec
    }

    /// A GGUF file was read: llama.cpp can only load that quant.
    pub fn gguf_file(&self) -> bool {
        self.resolved.weights.as_ref().is_some_and(|w| {
            w.tensors
                .iter()
                .any(|t| matches!(t.dtype, TensorDtype::Ggml(_)))
        })
    }

    /// `ORG/NAME` for engines that download by repo id.
    pub fn repo(&self) -> String {
        let (base, _, _) = vramfit_model::resolve::split_gguf_repo(&self.query);
        if base.contains('/') && !std::path::Path::new(&self.query).exists() {
            base
        } else {
            self.resolved.spec.id.clone()
        }
    }

    /// The catalog id of the model (for the GGUF repo catalog), when it is a catalog model.
    pub fn catalog_id(&self) -> Option<&'static str> {
        vramfit_model::catalog::find_model(&self.resolved.spec.id)
            .or_else(|| vramfit_model::catalog::find_model(&self.query))
            .map(|c| c.id.as_str())
    }

    /// The GGUF quants llama.cpp can download for this model: those a repo of the GGUF catalog
    /// publishes ([`vramfit_model::catalog::gguf_repos`]), from `asked` or the default ladder.
    /// A model published in a native quantized format (gpt-oss's MXFP4) gets only its native
    /// GGUF: a wider one would be an upcast, more bytes and no more quality. The second value
    /// lists the asked quants no known repo publishes.
    pub fn gguf_quants(&self, asked: Option<&[String]>) -> (Vec<String>, Vec<String>) {
        use vramfit_model::catalog::gguf_repos;
        let Some(id) = self.catalog_id() else {
            return (Vec::new(), asked.map(|a| a.to_vec()).unwrap_or_default());
        };
        let native = gguf_repos::native_quant(id);
        let list: Vec<String> = match (asked, &native) {
            (Some(q), _) => q.iter().map(|s| s.to_ascii_uppercase()).collect(),
            (None, Some(n)) => vec![n.clone()],
            (None, None) => GGUF_LADDER.iter().map(|s| s.to_string()).collect(),
        };
        // an FP8 / AWQ / GPTQ checkpoint: no GGUF wider than 8 bits
        let capped = self.spec().quant.is_some();
        let (mut ok, mut missing) = (Vec::new(), Vec::new());
        for q in list {
            let upcast = capped && matches!(q.as_str(), "BF16" | "F16" | "F32");
            if !upcast && gguf_repos::repo_for(id, &q).is_some() {
                ok.push(q);
            } else {
                missing.push(q);
            }
        }
        (ok, missing)
    }

    /// The GGUF quants to try and their tensors, best first: the local file's, or those of
    /// [`Model::gguf_quants`].
    pub fn ggufs(&self, quants: Option<&[String]>) -> Result<Vec<(String, WeightSet)>, PlanError> {
        if self.gguf_file() {
            let w = gguf_weights(&self.resolved)?;
            let name = self
                .resolved
                .gguf_file_type
                .and_then(|id| vramfit_model::quant::FileType::from_id(id as u32))
                .map(|f| f.name().to_string())
                .unwrap_or_else(|| "file".into());
            return Ok(vec![(name, w)]);
        }
        if let Some(q) = quants {
            // a bad name is an error even where no repo would publish it
            for name in q {
                if vramfit_model::quant::FileType::parse(name).is_none() {
                    predicted_gguf(&self.resolved, name)?;
                }
            }
        }
        let (list, _) = self.gguf_quants(quants);
        let sets = predicted_ggufs(&self.resolved, &list)?;
        Ok(list.into_iter().zip(sets).collect())
    }

    /// Every quant a table or plan may name even without a known repo (`table` shows the
    /// memory of each quant; only commands are limited to published files).
    pub fn ggufs_any(
        &self,
        quants: Option<&[String]>,
    ) -> Result<Vec<(String, WeightSet)>, PlanError> {
        if self.gguf_file() {
            return self.ggufs(quants);
        }
        let list: Vec<String> = match quants {
            Some(q) => q.iter().map(|s| s.to_ascii_uppercase()).collect(),
            None => match self
                .catalog_id()
                .and_then(vramfit_model::catalog::gguf_repos::native_quant)
            {
                Some(n) => vec![n],
                None => GGUF_LADDER.iter().map(|s| s.to_string()).collect(),
            },
        };
        let sets = predicted_ggufs(&self.resolved, &list)?;
        Ok(list.into_iter().zip(sets).collect())
    }

    /// llama.cpp's model flags for a quant: `-m FILE`, or `-hf` with the preferred repo of the
    /// GGUF catalog that publishes it (`ORG/NAME-GGUF` when none does: tables only, never a
    /// printed plan, see [`Model::gguf_quants`]).
    pub fn llama_args(&self, quant: &str) -> Vec<String> {
        if self.gguf_file() {
            return vec!["-m".into(), self.query.clone()];
        }
        let hf = self
            .catalog_id()
            .and_then(|id| vramfit_model::catalog::gguf_repos::repo_for(id, quant))
            .map(|r| r.hf_arg(quant))
            .unwrap_or_else(|| format!("{}-GGUF:{quant}", self.repo()));
        vec!["-hf".into(), hf]
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ollama_names_load_the_model_ollama_pulls() {
        let id = |q: &str| super::load(q).map(|r| r.spec.id);
        // before: `qwen3:30b` lost its size tag and planned Qwen3-8B (the alias `qwen3`)
        assert_eq!(id("qwen3:30b").unwrap(), "Qwen/Qwen3-30B-A3B");
        assert_eq!(
            id("qwen3-coder:30b").unwrap(),
            "Qwen/Qwen3-Coder-30B-A3B-Instruct"
        );
        assert_eq!(id("gpt-oss:20b").unwrap(), "openai/gpt-oss-20b");
        // before: `gpt-oss:120b-cloud` planned gpt-oss-20b on the local GPU
        let e = id("gpt-oss:120b-cloud").unwrap_err().to_string();
        assert!(
            e.contains("Ollama Cloud") && e.contains("'gpt-oss:120b'"),
            "{e}"
        );
    }
}
