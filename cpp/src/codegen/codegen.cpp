// `etproof gen`: the typed C++ API of one bundle, written from its manifest (etproof/codegen.h).
// Everything the generated code knows comes from the manifest; at run time it leans on
// etproof/typed.h (the tensor types, the hash check), the runtime binding (bundle.h) and, for
// preprocessing, etproof/image.h — never on code of its own.
#include "etproof/codegen/codegen.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "core/common.h"
#include "etproof/core/error.h"

namespace etproof {

namespace {

// C++20's keywords and alternative tokens ([lex.key], [lex.digraph]), and a few identifiers the
// generated class uses itself.
const std::set<std::string>& keywords() {
  static const std::set<std::string> k = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
  return k;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return !keywords().count(s);
}

// A tensor or method name as a member name: other characters become '_', a leading digit gets a
// '_' before it, a keyword (or one of the class's own member names) a '_' after it.
std::string member_name(const std::string& name, const std::set<std::string>& reserved = {}) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  if (keywords().count(s) || reserved.count(s)) s += "_";
  return s;
}

// "efficientnet_lite0" -> "EfficientnetLite0"; "tiny-mlp" -> "TinyMlp".
std::string camel(const std::string& name) {
  std::string s;
  bool up = true;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      up = true;
      continue;
    }
    s += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "Model" + s;
  return s;
}

// "EfficientnetLite0" -> "efficientnet_lite0".
std::string snake(const std::string& name) {
  std::string s;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (std::isupper(c)) {
      if (i > 0 && name[i - 1] != '_') s += '_';
      s += static_cast<char>(std::tolower(c));
    } else {
      s += static_cast<char>(c);
    }
  }
  return s;
}

// A C++ string literal holding `s` exactly: printable ASCII as is, '"' and '\\' escaped, every
// other byte (UTF-8 included) as a three-digit octal escape (never a hex escape, which would
// swallow the hex digits after it).
std::string literal(const std::string& s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f && c != '?') {  // '?': no trigraph can form
      r += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      r += buf;
    }
  }
  return r + "\"";
}

// A comment's text: one line, no "*/" or backslash-newline surprises.
std::string comment_text(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\\') c = ' ';
  return s;
}

// A double written so that it reads back to the same value (17 significant digits).
std::string exact_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string element_type(DType d) {
  switch (d) {
    case DType::kFloat32: return "float";
    case DType::kFloat64: return "double";
    case DType::kFloat16: return "etproof::half";
    case DType::kInt8: return "int8_t";
    case DType::kUInt8: return "uint8_t";
    case DType::kInt16: return "int16_t";
    case DType::kInt32: return "int32_t";
    case DType::kInt64: return "int64_t";
    case DType::kBool: return "bool";
  }
  return "void";
}

std::string tensor_type(const TensorSpec& t) {
  std::string s = "etproof::Tensor<" + element_type(t.dtype);
  for (int64_t e : t.shape) s += ", " + (e < 0 ? std::string("etproof::dyn") : std::to_string(e));
  return s + ">";
}

// "float32 [1, 3, 224, 224], nchw; dim 0 (batch) 1..8"
std::string spec_comment(const TensorSpec& t) {
  std::string s = std::string(to_string(t.dtype)) + " " + shape_to_string(t.shape);
  if (t.layout) s += ", " + *t.layout;
  for (const DynamicDim& d : t.dynamic_dims)
    s += "; dim " + std::to_string(d.axis) + " (" + d.name + ") " + std::to_string(d.min) + ".." +
         std::to_string(d.max);
  return comment_text(s);
}

std::string signature_text(const MethodSpec& m) {
  auto list = [](const std::vector<TensorSpec>& v) {
    std::vector<std::string> parts;
    for (const TensorSpec& t : v)
      parts.push_back(t.name + " " + std::string(to_string(t.dtype)) + " " + shape_to_string(t.shape));
    return detail::join(parts);
  };
  return comment_text(m.name + "(" + list(m.inputs) + ") -> " + list(m.outputs));
}

// The class's own member names: a method or tensor name that equals one gets a '_' after it.
const std::set<std::string> kClassMembers = {
    "open",      "run",     "delegates", "bundle",   "top_k",         "preprocess",
    "preprocessing", "handle_", "Inputs", "Outputs", "kLabels",    "kLabelsOutput"};

struct MethodNames {
  const MethodSpec* spec = nullptr;
  std::string function;                  // member function
  std::string type_stem;                 // CamelCase: STEMInputs, STEMOutputs
  std::vector<std::string> inputs, outputs;  // member names, in manifest order
};

std::vector<std::string> tensor_members(const std::vector<TensorSpec>& specs,
                                        const std::string& where) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const TensorSpec& t : specs) {
    const std::string n = member_name(t.name);
    if (!seen.insert(n).second)
      throw Error(ErrorKind::kInvalidArgument,
                  "two " + where + " become the member name \"" + n + "\" (one is \"" + t.name +
                      "\")",
                  "re-export the bundle with tensor names that differ in letters or digits");
    names.push_back(n);
  }
  return names;
}

std::vector<MethodNames> method_names(const Manifest& m) {
  std::vector<MethodNames> out;
  std::set<std::string> functions, stems;
  for (const MethodSpec& spec : m.methods) {
    MethodNames n;
    n.spec = &spec;
    n.function = member_name(spec.name, kClassMembers);
    n.type_stem = camel(spec.name);
    if (!functions.insert(n.function).second || !stems.insert(n.type_stem).second)
      throw Error(ErrorKind::kInvalidArgument,
                  "two methods become the same C++ name (" + n.function + ", " + n.type_stem + ")",
                  "re-export the bundle with method names that differ in more than case or '_'");
    n.inputs = tensor_members(spec.inputs, "inputs of method " + spec.name);
    n.outputs = tensor_members(spec.outputs, "outputs of method " + spec.name);
    out.push_back(std::move(n));
  }
  return out;
}

void check_namespace(const std::string& ns) {
  if (ns.empty()) return;
  size_t start = 0;
  while (true) {
    const size_t end = ns.find("::", start);
    const std::string part = ns.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!is_identifier(part))
      throw Error(ErrorKind::kInvalidArgument,
                  "namespace \"" + ns + "\": \"" + part + "\" is not a C++ identifier",
                  "pass --namespace as identifiers joined by :: (e.g. myapp::models)");
    if (end == std::string::npos) break;
    start = end + 2;
  }
}

std::string positional_params(const MethodNames& n) {
  std::vector<std::string> p;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    p.push_back("const " + tensor_type(n.spec->inputs[i]) + "& " + n.inputs[i]);
  return detail::join(p);
}

std::string positional_args(const MethodNames& n) { return detail::join(n.inputs); }

// What the generated files are made from: the manifest and the names derived from it, checked.
struct CodePlan {
  const Manifest* m = nullptr;
  std::string class_name, header_name, source_name;  // "TinyMlp", "tiny_mlp.h", "tiny_mlp.cpp"
  std::string ns;                             // the namespace, "a::b"; "" for the global one
  std::vector<MethodNames> methods;           // in manifest order; the first is run()
  const TensorSpec* pp_input = nullptr;       // the input the preprocessing feeds; null: none
  const TensorSpec* label_output = nullptr;   // the output kLabels indexes; null: none
};

// The names and tensors the code needs. Throws Error{kInvalidArgument} for a class name that is
// not an identifier, a namespace that is not identifiers joined by "::", or two methods or
// tensors that become the same C++ name.
CodePlan plan_code(const Bundle& bundle, const GenOptions& options) {
  const Manifest& m = bundle.manifest;
  CodePlan p;
  p.m = &m;
  p.class_name = options.class_name.empty() ? camel(m.model) : options.class_name;
  if (!is_identifier(p.class_name))
    throw Error(ErrorKind::kInvalidArgument,
                "class name \"" + p.class_name + "\" is not a C++ identifier (or is a keyword)",
                "pass --class NAME with letters, digits and '_', not starting with a digit");
  check_namespace(options.namespace_name);
  p.ns = options.namespace_name;
  const std::string stem = snake(p.class_name);
  p.header_name = stem + ".h";
  p.source_name = stem + ".cpp";
  p.methods = method_names(m);
  if (m.preprocessing.has_value())
    for (const TensorSpec& t : m.inputs)
      if (t.name == m.preprocessing->input) p.pp_input = &t;
  if (m.labels.has_value())
    for (const TensorSpec& t : m.outputs)
      if (t.name == m.labels->output) p.label_output = &t;
  return p;
}

// The header's opening: what it was generated from, its includes, the namespace, the class and
// its constants (bundle name, model, program SHA-256, backend, recipe, precision, delegates).
void header_preamble(std::ostream& h, const CodePlan& p) {
  const Manifest& m = *p.m;
  h << "// " << p.header_name << " — generated by `etproof gen` (etproof " << ETPROOF_VERSION
    << ") from the bundle " << comment_text(m.name) << ".\n"
    << "// Do not edit: regenerate when the bundle changes (etproof_add_model does on every build\n"
    << "// where its manifest changed). API: docs/api.md, \"The generated C++ API\".\n//\n"
    << "// Model " << comment_text(m.model) << ", exported for backend " << comment_text(m.backend)
    << " (recipe " << comment_text(m.recipe) << ", precision " << comment_text(m.precision)
    << "); delegates: " << comment_text(detail::join_or_none(m.delegates)) << ".\n";
  for (const MethodNames& n : p.methods) h << "//   " << signature_text(*n.spec) << "\n";
  h << "#pragma once\n\n"
    << "#include <array>\n#include <cstddef>\n#include <cstdint>\n#include <filesystem>\n"
    << "#include <string>\n#include <string_view>\n#include <vector>\n\n"
    << "#include <etproof/codegen/typed.h>\n";
  if (m.preprocessing.has_value()) h << "#include <etproof/core/manifest.h>\n";
  h << "\n";
  if (!p.ns.empty()) h << "namespace " << p.ns << " {\n\n";
  h << "class " << p.class_name << " {\n public:\n"
    << "  // The bundle this code was generated from (its manifest). open() refuses a bundle whose\n"
    << "  // program has another SHA-256.\n"
    << "  static constexpr std::string_view kBundleName = " << literal(m.name) << ";\n"
    << "  static constexpr std::string_view kModel = " << literal(m.model) << ";\n"
    << "  static constexpr std::string_view kProgramSha256 = " << literal(m.artifact.sha256) << ";\n"
    << "  static constexpr std::string_view kBackend = " << literal(m.backend) << ";\n"
    << "  static constexpr std::string_view kRecipe = " << literal(m.recipe) << ";\n"
    << "  static constexpr std::string_view kPrecision = " << literal(m.precision) << ";\n"
    << "  // Delegate ids the program holds, as recorded at export (delegates() reads them from the\n"
    << "  // loaded program).\n"
    << "  static constexpr std::array<std::string_view, " << m.delegates.size() << "> kDelegates = {";
  for (size_t i = 0; i < m.delegates.size(); ++i) h << (i ? ", " : "") << literal(m.delegates[i]);
  h << "};\n\n";
}

// One method's declarations: its Inputs and Outputs structs and its two member functions.
void method_declarations(std::ostream& h, const MethodNames& n, const TensorSpec* label_output) {
  const MethodSpec& s = *n.spec;
  h << "  // Method \"" << comment_text(s.name) << "\".\n"
    << "  struct " << n.type_stem << "Inputs {\n";
  for (size_t i = 0; i < s.inputs.size(); ++i)
    h << "    " << tensor_type(s.inputs[i]) << " " << n.inputs[i] << ";  // \""
      << comment_text(s.inputs[i].name) << "\": " << spec_comment(s.inputs[i]) << "\n";
  h << "  };\n  struct " << n.type_stem << "Outputs {\n";
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    h << "    " << tensor_type(s.outputs[i]) << " " << n.outputs[i] << ";  // \""
      << comment_text(s.outputs[i].name) << "\": " << spec_comment(s.outputs[i]);
    if (label_output == &s.outputs[i]) h << "; indexes kLabels";
    h << "\n";
  }
  h << "  };\n"
    << "  // Runs the method once (LoadedModel::run: a dynamic size outside its exported range is\n"
    << "  // Error{kShapeMismatch}; a failing run Error{kRunFailed} with ExecuTorch's code).\n"
    << "  " << n.type_stem << "Outputs " << n.function << "(const " << n.type_stem
    << "Inputs& in);\n"
    << "  " << n.type_stem << "Outputs " << n.function << "(" << positional_params(n) << ");\n\n";
}

// The class's common members: Inputs/Outputs and run() for the first method, open(), delegates(),
// bundle().
void handle_declarations(std::ostream& h, const CodePlan& p) {
  const std::string& C = p.class_name;
  const MethodNames& first = p.methods.front();
  h << "  // The first method, " << comment_text(first.spec->name) << ", as run().\n"
    << "  using Inputs = " << first.type_stem << "Inputs;\n"
    << "  using Outputs = " << first.type_stem << "Outputs;\n";
  if (first.function != "run") {
    h << "  Outputs run(const Inputs& in) { return " << first.function << "(in); }\n"
      << "  Outputs run(" << positional_params(first) << ") { return " << first.function << "("
      << positional_args(first) << "); }\n";
  }
  h << "\n"
    << "  // Opens, verifies and loads the bundle (its directory, manifest or .pte):\n"
    << "  // etproof::ModelHandle::open's errors, Error{kArtifactMismatch} when its program is not\n"
    << "  // the one this code was generated from.\n"
    << "  static " << C << " open(const std::filesystem::path& bundle);\n"
    << "  // The copy etproof_add_model puts beside the executable (etproof-bundles/" << comment_text(p.m->name)
    << ").\n"
    << "  static " << C << " open();\n"
    << "  // Delegate ids in the loaded program (sorted).\n"
    << "  const std::vector<std::string>& delegates() const { return handle_.delegates(); }\n"
    << "  const etproof::Bundle& bundle() const { return handle_.bundle(); }\n";
}

// kLabelsOutput, kLabels and top_k() for a manifest with labels (top_k only where the labelled
// output exists); nothing without labels.
void labels_declarations(std::ostream& h, const CodePlan& p) {
  const Manifest& m = *p.m;
  if (!m.labels.has_value()) return;
  h << "\n  // Labels of output \"" << comment_text(m.labels->output) << "\" ("
    << comment_text(m.labels->source) << ").\n"
    << "  static constexpr std::string_view kLabelsOutput = " << literal(m.labels->output) << ";\n"
    << "  static constexpr std::array<std::string_view, " << m.labels->names.size()
    << "> kLabels = {\n";
  for (size_t i = 0; i < m.labels->names.size(); ++i)
    h << "      " << literal(m.labels->names[i]) << ",\n";
  h << "  };\n";
  if (p.label_output)
    h << "  // The k most probable labels (softmax over the logits; etproof::top_k).\n"
      << "  static std::vector<etproof::Ranked> top_k(const " << tensor_type(*p.label_output)
      << "& logits, size_t k);\n";
}

// preprocessing() and the two preprocess() overloads, where the manifest's preprocessing feeds an
// input it has; nothing otherwise.
void preprocessing_declarations(std::ostream& h, const CodePlan& p) {
  if (!p.m->preprocessing.has_value() || !p.pp_input) return;
  const ImagePreprocessing& pp = *p.m->preprocessing;
  const std::string t = tensor_type(*p.pp_input);
  h << "\n  // The manifest's image preprocessing for input \"" << comment_text(p.pp_input->name)
    << "\": resize the shorter side to " << pp.resize_shorter << " (bilinear),\n"
    << "  // centre crop " << pp.crop_h << "x" << pp.crop_w
    << ", (pixel - mean) / std — the export half's arithmetic (etproof/image.h).\n"
    << "  static etproof::ImagePreprocessing preprocessing();\n"
    << "  // From an image file (JPEG, PNG, BMP, TGA, GIF). Error{kIo} when it cannot be decoded.\n"
    << "  static " << t << " preprocess(const std::filesystem::path& image);\n"
    << "  // From 8-bit RGB pixels: row-major, height rows of width x 3 bytes.\n"
    << "  static " << t << " preprocess(const uint8_t* rgb, int width, int height);\n";
}

// The header: the class with every member declared.
std::string header_text(const CodePlan& p) {
  std::ostringstream h;
  header_preamble(h, p);
  for (const MethodNames& n : p.methods) method_declarations(h, n, p.label_output);
  handle_declarations(h, p);
  labels_declarations(h, p);
  preprocessing_declarations(h, p);
  h << "\n private:\n"
    << "  explicit " << p.class_name << "(etproof::ModelHandle h) : handle_(std::move(h)) {}\n"
    << "  etproof::ModelHandle handle_;\n"
    << "};\n";
  if (!p.ns.empty()) h << "\n}  // namespace " << p.ns << "\n";
  return h.str();
}

// One method's two member functions: the struct form runs the program and converts each output
// (from_host checks dtype and shape); the positional form builds the struct.
void method_definitions(std::ostream& c, const CodePlan& p, const MethodNames& n) {
  const std::string& C = p.class_name;
  const MethodSpec& s = *n.spec;
  c << "\n" << C << "::" << n.type_stem << "Outputs " << C << "::" << n.function << "(const "
    << n.type_stem << "Inputs& in) {\n"
    << "  std::map<std::string, etproof::HostTensor> out = handle_.model().run(" << literal(s.name)
    << ", {";
  for (size_t i = 0; i < s.inputs.size(); ++i)
    c << (i ? ", " : "") << "{" << literal(s.inputs[i].name) << ", in." << n.inputs[i] << ".host()}";
  c << "});\n  return " << n.type_stem << "Outputs{\n";
  for (size_t i = 0; i < s.outputs.size(); ++i)
    c << "      decltype(" << n.type_stem << "Outputs::" << n.outputs[i] << ")::from_host(std::move(out.at("
      << literal(s.outputs[i].name) << ")), "
      << literal("output \"" + s.outputs[i].name + "\" of " + s.name) << "),\n";
  c << "  };\n}\n\n"
    << C << "::" << n.type_stem << "Outputs " << C << "::" << n.function << "("
    << positional_params(n) << ") {\n"
    << "  return " << n.function << "(" << n.type_stem << "Inputs{" << positional_args(n) << "});\n}\n";
}

// preprocessing() with the manifest's numbers written exactly, the preprocessed input's spec, and
// the two preprocess() overloads; nothing without preprocessing of an input the manifest has.
void preprocessing_definitions(std::ostream& c, const CodePlan& p) {
  if (!p.m->preprocessing.has_value() || !p.pp_input) return;
  const std::string& C = p.class_name;
  const TensorSpec* pp_input = p.pp_input;
  const ImagePreprocessing& pp = *p.m->preprocessing;
  const std::string t = tensor_type(*pp_input);
  c << "\netproof::ImagePreprocessing " << C << "::preprocessing() {\n"
    << "  etproof::ImagePreprocessing p;\n"
    << "  p.input = " << literal(pp.input) << ";\n"
    << "  p.color = " << literal(pp.color) << ";\n"
    << "  p.resize_shorter = " << pp.resize_shorter << ";\n"
    << "  p.interpolation = " << literal(pp.interpolation) << ";\n"
    << "  p.crop_h = " << pp.crop_h << ";\n  p.crop_w = " << pp.crop_w << ";\n";
  for (int k = 0; k < 3; ++k)
    c << "  p.mean[" << k << "] = " << exact_number(pp.mean[k]) << ";\n  p.std[" << k
      << "] = " << exact_number(pp.std[k]) << ";\n";
  c << "  p.value_min = " << exact_number(pp.value_min) << ";\n"
    << "  p.value_max = " << exact_number(pp.value_max) << ";\n  return p;\n}\n\n"
    << "namespace {\n// Input \"" << comment_text(pp_input->name) << "\" as the manifest records it.\n"
    << "etproof::TensorSpec preprocessed_spec() {\n"
    << "  etproof::TensorSpec s;\n"
    << "  s.name = " << literal(pp_input->name) << ";\n"
    << "  s.dtype = etproof::DType::k";
  // The enumerator's name from the dtype ("float32" -> Float32, "uint8" -> UInt8).
  std::string dt(to_string(pp_input->dtype));
  std::string en = dt.rfind("uint", 0) == 0 ? "UInt" + dt.substr(4) : camel(dt);
  c << en << ";\n  s.shape = {";
  for (size_t i = 0; i < pp_input->shape.size(); ++i) c << (i ? ", " : "") << pp_input->shape[i];
  c << "};\n";
  if (pp_input->layout) c << "  s.layout = " << literal(*pp_input->layout) << ";\n";
  c << "  return s;\n}\n}  // namespace\n\n"
    << t << " " << C << "::preprocess(const std::filesystem::path& image) {\n"
    << "  return " << t << "::from_host(\n"
    << "      etproof::load_image(image, preprocessing(), preprocessed_spec()), \"preprocessed image\");\n}\n\n"
    << t << " " << C << "::preprocess(const uint8_t* rgb, int width, int height) {\n"
    << "  return " << t << "::from_host(\n"
    << "      etproof::preprocess_rgb8(rgb, width, height, preprocessing(), preprocessed_spec()),\n"
    << "      \"preprocessed image\");\n}\n";
}

// The source: every member the header declares, defined.
std::string source_text(const CodePlan& p) {
  const std::string& C = p.class_name;
  std::ostringstream c;
  c << "// " << p.source_name << " — generated by `etproof gen` (etproof " << ETPROOF_VERSION
    << ") from the bundle " << comment_text(p.m->name) << ". Do not edit.\n"
    << "#include \"" << p.header_name << "\"\n\n#include <map>\n#include <utility>\n";
  if (p.m->preprocessing.has_value() && p.pp_input) c << "\n#include <etproof/demo/image.h>\n";
  c << "\n";
  if (!p.ns.empty()) c << "namespace " << p.ns << " {\n\n";
  c << C << " " << C << "::open(const std::filesystem::path& bundle) {\n"
    << "  return " << C << "(etproof::ModelHandle::open(bundle, {kBundleName, kProgramSha256}));\n"
    << "}\n\n"
    << C << " " << C << "::open() { return open(etproof::bundle_beside_executable(kBundleName)); }\n";
  for (const MethodNames& n : p.methods) method_definitions(c, p, n);
  if (p.m->labels.has_value() && p.label_output) {
    c << "\nstd::vector<etproof::Ranked> " << C << "::top_k(const " << tensor_type(*p.label_output)
      << "& logits, size_t k) {\n"
      << "  static const std::vector<std::string> names(kLabels.begin(), kLabels.end());\n"
      << "  return etproof::top_k(logits.host(), names, k);\n}\n";
  }
  preprocessing_definitions(c, p);
  if (!p.ns.empty()) c << "\n}  // namespace " << p.ns << "\n";
  return c.str();
}

}  // namespace

GeneratedCode generate_model_api(const Bundle& bundle, const GenOptions& options) {
  const CodePlan plan = plan_code(bundle, options);
  GeneratedCode g;
  g.class_name = plan.class_name;
  g.header_name = plan.header_name;
  g.source_name = plan.source_name;
  g.header = header_text(plan);
  g.source = source_text(plan);
  return g;
}

GeneratedCode write_model_api(const std::filesystem::path& bundle,
                              const std::filesystem::path& out_dir, const GenOptions& options) {
  const Bundle b = open_bundle(bundle);
  GeneratedCode g = generate_model_api(b, options);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec)
    throw Error(ErrorKind::kIo, "cannot create " + out_dir.string() + ": " + ec.message(),
                "check the path and its permissions");
  for (const auto& [name, text] : {std::pair{g.header_name, &g.header}, std::pair{g.source_name, &g.source}}) {
    const std::filesystem::path p = out_dir / name;
    std::ifstream in(p, std::ios::binary);
    if (in) {
      const std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (old == *text) continue;
    }
    detail::write_file_atomic(p, *text);
    g.written = true;
  }
  return g;
}

}  // namespace etproof
