// top1.rs — the C ABI from Rust (CTest c_api.rust_top1): no crate, no bindgen, only the
// declarations of etproof_c.h written out below and std. Built by rustc against libetproof_c.so.
//
//   top1 ETPROOF_CLI BUNDLE PHOTOS_DIR
//
// Opens BUNDLE (the EfficientNet-Lite0 XNNPACK demo bundle) through the C ABI, checks that its
// program holds XnnpackBackend, runs each golden input (BUNDLE/NAME.goldens/CASE.in.INPUT.npy:
// the demo photos preprocessed at export) and takes the top-1 class of the logits; runs
// `ETPROOF_CLI classify PHOTOS_DIR/CASE.{png,jpg} --bundles DIR --backend B --recipe R` on the
// same photo and requires the same top-1 class (index and label); runs the bundle's own gate
// (must pass). Exit 0 all held, 1 not, 77 (CTest's skip) when BUNDLE or PHOTOS_DIR is missing.
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::process::{exit, Command};

const ETPROOF_C_ABI_VERSION: c_int = 1;
const ETPROOF_MAX_RANK: usize = 16;
const ETPROOF_DTYPE_FLOAT32: i32 = 0;

#[repr(C)]
struct EtproofModel {
    _private: [u8; 0],
}

#[repr(C)]
struct TensorInfo {
    name: *const c_char,
    dtype: i32,
    rank: usize,
    shape: *const i64,
    nbytes: usize,
}

#[repr(C)]
struct Input {
    dtype: i32,
    rank: usize,
    shape: *const i64,
    data: *const c_void,
    nbytes: usize,
}

#[repr(C)]
struct Output {
    dtype: i32,
    data: *mut c_void,
    capacity: usize,
    nbytes: usize,
    rank: usize,
    shape: [i64; ETPROOF_MAX_RANK],
}

#[repr(C)]
struct GateResult {
    passed: i32,
    cases: usize,
    agreed: usize,
    drifted: usize,
    other: usize,
    report_text: *const c_char,
    report_json: *const c_char,
}

#[link(name = "etproof_c")]
extern "C" {
    fn etproof_version() -> *const c_char;
    fn etproof_abi_version() -> c_int;
    fn etproof_last_error_kind() -> *const c_char;
    fn etproof_last_error_message() -> *const c_char;
    fn etproof_last_error_remedy() -> *const c_char;
    fn etproof_open(path: *const c_char) -> *mut EtproofModel;
    fn etproof_close(model: *mut EtproofModel);
    fn etproof_model_property(model: *const EtproofModel, key: *const c_char) -> *const c_char;
    fn etproof_input_info(model: *const EtproofModel, method: *const c_char, index: usize,
                          info: *mut TensorInfo) -> c_int;
    fn etproof_output_info(model: *const EtproofModel, method: *const c_char, index: usize,
                           info: *mut TensorInfo) -> c_int;
    fn etproof_label(model: *const EtproofModel, index: usize) -> *const c_char;
    fn etproof_run(model: *mut EtproofModel, method: *const c_char, inputs: *const Input,
                   n_inputs: usize, outputs: *mut Output, n_outputs: usize) -> c_int;
    fn etproof_gate(model: *mut EtproofModel, result: *mut GateResult) -> c_int;
}

fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::from("(null)");
    }
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn last_error() -> String {
    unsafe {
        format!("[{}] {}; remedy: {}", text(etproof_last_error_kind()),
                text(etproof_last_error_message()), text(etproof_last_error_remedy()))
    }
}

fn property(m: *const EtproofModel, key: &str) -> String {
    let k = CString::new(key).unwrap();
    text(unsafe { etproof_model_property(m, k.as_ptr()) })
}

// A .npy file's float32 data (format 1.0–3.0, '<f4', C order).
fn read_npy_f32(path: &Path) -> Result<Vec<f32>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {}", path.display(), e))?;
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(format!("{}: not a .npy file", path.display()));
    }
    let (len, start) = if bytes[6] == 1 {
        (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
    } else {
        (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
    };
    let header = String::from_utf8_lossy(&bytes[start..start + len]);
    if !header.contains("'<f4'") || header.contains("'fortran_order': True") {
        return Err(format!("{}: not little-endian float32 in C order: {}", path.display(), header));
    }
    Ok(bytes[start + len..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

// The class index and label of `etproof classify`'s first ranked line ("  0.3838  tiger cat (282)").
fn classify(cli: &str, photo: &Path, bundles: &Path, backend: &str, recipe: &str)
            -> Result<(usize, String), String> {
    let out = Command::new(cli)
        .arg("classify").arg(photo).arg("--bundles").arg(bundles)
        .args(["--backend", backend, "--recipe", recipe, "--top", "1"])
        .output().map_err(|e| format!("{}: {}", cli, e))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!("classify {} exited {}: {}{}", photo.display(), out.status, stdout,
                           String::from_utf8_lossy(&out.stderr)));
    }
    for line in stdout.lines() {
        let t = line.trim();
        if !t.ends_with(')') || !t.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let open = t.rfind('(').ok_or("no '('")?;
        let index: usize = t[open + 1..t.len() - 1].parse().map_err(|e| format!("{}: {}", t, e))?;
        let label = t[..open].trim().splitn(2, char::is_whitespace).nth(1).unwrap_or("").trim();
        return Ok((index, label.to_string()));
    }
    Err(format!("no ranked line in classify's output:\n{}", stdout))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: top1 ETPROOF_CLI BUNDLE PHOTOS_DIR");
        exit(2);
    }
    let (cli, bundle, photos) = (&args[1], PathBuf::from(&args[2]), PathBuf::from(&args[3]));
    if !bundle.is_dir() || !photos.is_dir() {
        println!("skipped: no demo bundle at {} or no photos at {} (./setup.sh exports them)",
                 bundle.display(), photos.display());
        exit(77);
    }
    unsafe {
        println!("etproof {} through its C ABI {} from Rust", text(etproof_version()),
                 etproof_abi_version());
        if etproof_abi_version() != ETPROOF_C_ABI_VERSION {
            eprintln!("FAIL: the library's ABI is {}, these declarations are {}",
                      etproof_abi_version(), ETPROOF_C_ABI_VERSION);
            exit(1);
        }
        let path = CString::new(args[2].as_str()).unwrap();
        let m = etproof_open(path.as_ptr());
        if m.is_null() {
            eprintln!("FAIL: open {}: {}", bundle.display(), last_error());
            exit(1);
        }
        let mut failures = 0;
        let delegates = property(m, "delegates");
        println!("opened {}: delegates in the program: {}", property(m, "name"), delegates);
        if !delegates.split(',').any(|d| d == "XnnpackBackend") {
            eprintln!("FAIL: no XnnpackBackend in the program");
            failures += 1;
        }
        let mut ii: TensorInfo = std::mem::zeroed();
        let mut oi: TensorInfo = std::mem::zeroed();
        if etproof_input_info(m, std::ptr::null(), 0, &mut ii) != 0
            || etproof_output_info(m, std::ptr::null(), 0, &mut oi) != 0
        {
            eprintln!("FAIL: describe: {}", last_error());
            exit(1);
        }
        let input_name = text(ii.name);
        let goldens = bundle.join(format!("{}.goldens", property(m, "name")));
        let suffix = format!(".in.{}.npy", input_name);
        let mut cases: Vec<String> = std::fs::read_dir(&goldens)
            .unwrap_or_else(|e| { eprintln!("FAIL: {}: {}", goldens.display(), e); exit(1) })
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|f| f.strip_suffix(suffix.as_str()).map(str::to_string))
            .collect();
        cases.sort();
        let bundles_dir = bundle.parent().unwrap_or(Path::new("."));
        let (backend, recipe) = (property(m, "backend"), property(m, "recipe"));
        let mut compared = 0;
        for case in &cases {
            let x = match read_npy_f32(&goldens.join(format!("{}{}", case, suffix))) {
                Ok(x) => x,
                Err(e) => { eprintln!("FAIL: {}", e); failures += 1; continue; }
            };
            let input = Input {
                dtype: ETPROOF_DTYPE_FLOAT32,
                rank: ii.rank,
                shape: ii.shape,
                data: x.as_ptr() as *const c_void,
                nbytes: x.len() * 4,
            };
            let mut logits = vec![0f32; oi.nbytes / 4];
            let mut output = Output {
                dtype: ETPROOF_DTYPE_FLOAT32,
                data: logits.as_mut_ptr() as *mut c_void,
                capacity: logits.len() * 4,
                nbytes: 0,
                rank: 0,
                shape: [0; ETPROOF_MAX_RANK],
            };
            if etproof_run(m, std::ptr::null(), &input, 1, &mut output, 1) != 0 {
                eprintln!("FAIL: run {}: {}", case, last_error());
                failures += 1;
                continue;
            }
            let mut top = 0;
            for (i, v) in logits.iter().enumerate() {
                if *v > logits[top] {
                    top = i;
                }
            }
            let label = text(etproof_label(m, top));
            let photo = ["png", "jpg", "jpeg"].iter()
                .map(|ext| photos.join(format!("{}.{}", case, ext)))
                .find(|p| p.is_file());
            let Some(photo) = photo else {
                println!("  {:<10} C ABI top-1 {} ({}); no photo of that name to classify", case,
                         top, label);
                continue;
            };
            match classify(cli, &photo, bundles_dir, &backend, &recipe) {
                Ok((index, cli_label)) => {
                    let same = index == top && cli_label == label;
                    println!("  {:<10} C ABI top-1 {} ({}), classify {} ({}): {}", case, top, label,
                             index, cli_label, if same { "same" } else { "DIFFERENT" });
                    if !same {
                        failures += 1;
                    }
                    compared += 1;
                }
                Err(e) => { eprintln!("FAIL: {}", e); failures += 1; }
            }
        }
        if compared == 0 {
            eprintln!("FAIL: no golden case had a photo to compare with classify");
            failures += 1;
        }
        let mut gate: GateResult = std::mem::zeroed();
        if etproof_gate(m, &mut gate) != 0 {
            eprintln!("FAIL: gate: {}", last_error());
            failures += 1;
        } else {
            println!("gate: passed {}, {} case(s): {} agreed, {} drifted, {} other", gate.passed,
                     gate.cases, gate.agreed, gate.drifted, gate.other);
            if gate.passed != 1 {
                eprintln!("FAIL: the gate did not pass:\n{}", text(gate.report_text));
                failures += 1;
            }
        }
        etproof_close(m);
        if failures > 0 {
            eprintln!("{} check(s) failed", failures);
            exit(1);
        }
        println!("rust top1: {} photo(s), the same top-1 as classify", compared);
    }
}
