use std::path::{Path, PathBuf};

use vinort_ir::proto::onnx::{OptionalProto, SequenceProto, TensorProto};
use vinort_ir::proto::prost::Message;
use vinort_ir::tensor_proto::tensor_to_proto;
use vinort_ir::{DType, Sequence, Tensor, Value, ValueType};

use super::*;

fn t<T: vinort_ir::Elem>(shape: &[usize], v: &[T]) -> Value {
    Value::Tensor(Tensor::from_slice(shape, v).unwrap())
}

fn cmp(got: &Value, want: &Value) -> Result<(), Mismatch> {
    compare(got, want, Tolerance::default())
}

fn element(m: Mismatch) -> ElementMismatch {
    match m.kind {
        MismatchKind::Element(e) => *e,
        other => panic!("expected an element mismatch, got {other:?}"),
    }
}

#[test]
fn equal_values_pass() {
    let v = t(&[2, 2], &[1.0f32, -2.0, 0.0, 1e30]);
    assert_eq!(cmp(&v, &v), Ok(()));
    let s = Value::Tensor(Tensor::from_strings(&[2], vec!["a".into(), "b".into()]).unwrap());
    assert_eq!(cmp(&s, &s), Ok(()));
}

#[test]
fn tolerance_boundary_is_atol_plus_rtol_times_reference() {
    // allowed = 1e-7 + 1e-3 * 1 = 0.0010001
    let want = t(&[1], &[1.0f64]);
    assert_eq!(cmp(&t(&[1], &[1.0f64 + 0.00100005]), &want), Ok(()));
    assert_eq!(cmp(&t(&[1], &[1.0f64 - 0.00100005]), &want), Ok(()));
    let e = element(cmp(&t(&[1], &[1.0f64 + 0.00100015]), &want).unwrap_err());
    assert!((e.allowed.unwrap() - 0.0010001).abs() < 1e-15, "{e:?}");
    // The tolerance scales with the reference, not with the produced value.
    let big = t(&[1], &[1000.0f64]);
    assert_eq!(cmp(&t(&[1], &[1000.99f64]), &big), Ok(()));
    assert!(cmp(&t(&[1], &[1001.01f64]), &big).is_err());
    // ... so swapping the sides can change the verdict: |diff| 1.0005 is allowed against
    // 1001.0005 (1.0010006) but not against 1000 (1.0000001).
    assert_eq!(cmp(&big, &t(&[1], &[1001.0005f64])), Ok(()));
    assert!(cmp(&t(&[1], &[1001.0005f64]), &big).is_err());
    // Near zero only atol applies.
    let zero = t(&[1], &[0.0f64]);
    assert_eq!(cmp(&t(&[1], &[0.99e-7f64]), &zero), Ok(()));
    assert!(cmp(&t(&[1], &[1.01e-7f64]), &zero).is_err());
    // A caller's tolerance is used.
    let loose = Tolerance { rtol: 0.0, atol: 0.5 };
    assert_eq!(compare(&t(&[1], &[0.49f32]), &t(&[1], &[0.0f32]), loose), Ok(()));
    assert!(compare(&t(&[1], &[0.51f32]), &t(&[1], &[0.0f32]), loose).is_err());
}

#[test]
fn half_precision_floats_compare_by_value() {
    let f16s = |bits: &[i32]| {
        let p = TensorProto {
            data_type: Some(10),
            dims: vec![bits.len() as i64],
            int32_data: bits.to_vec(),
            ..Default::default()
        };
        Value::Tensor(vinort_ir::tensor_proto::tensor_from_proto(&p, &Default::default()).unwrap())
    };
    // 0x3c00 = 1.0, 0x4000 = 2.0, 0x4100 = 2.5
    let a = f16s(&[0x3c00, 0x4000]);
    let b = f16s(&[0x3c00, 0x4100]);
    assert_eq!(cmp(&a, &a), Ok(()));
    let e = element(cmp(&a, &b).unwrap_err());
    assert_eq!((e.flat, e.got.as_str(), e.want.as_str()), (1, "2", "2.5"));
}

#[test]
fn nan_equals_nan_and_infinities_must_match() {
    let nan = t(&[1], &[f32::NAN]);
    assert_eq!(cmp(&nan, &nan), Ok(()));
    assert!(cmp(&nan, &t(&[1], &[0.0f32])).is_err());
    assert!(cmp(&t(&[1], &[0.0f32]), &nan).is_err());
    let inf = t(&[1], &[f32::INFINITY]);
    assert_eq!(cmp(&inf, &inf), Ok(()));
    assert!(cmp(&inf, &t(&[1], &[f32::NEG_INFINITY])).is_err());
    assert!(cmp(&t(&[1], &[f32::MAX]), &inf).is_err());
    assert!(cmp(&inf, &t(&[1], &[f32::MAX])).is_err());
}

#[test]
fn integers_are_exact_in_their_own_width() {
    let a = t(&[1], &[(1i64 << 53) + 1]);
    let b = t(&[1], &[1i64 << 53]);
    let e = element(cmp(&a, &b).unwrap_err());
    assert_eq!(e.got, "9007199254740993");
    assert_eq!(e.want, "9007199254740992");
    assert_eq!(e.diff, Some(1.0));
    assert_eq!(e.allowed, None);
    assert!(cmp(&t(&[1], &[u64::MAX]), &t(&[1], &[u64::MAX - 1])).is_err());
    assert_eq!(cmp(&t(&[1], &[u64::MAX]), &t(&[1], &[u64::MAX])), Ok(()));
    // No tolerance for small integers either.
    assert!(cmp(&t(&[1], &[1001i32]), &t(&[1], &[1000i32])).is_err());
    // rtol never applies to integers: 1e-3 of 2^40 would be a billion.
    let loose_rel = Tolerance { rtol: 1e-3, atol: 0.5 };
    assert!(compare(&t(&[1], &[(1i64 << 40) + 1]), &t(&[1], &[1i64 << 40]), loose_rel).is_err());
    assert!(cmp(&t(&[2], &[true, false]), &t(&[2], &[true, true])).is_err());
}

#[test]
fn integers_allow_whole_steps_of_atol() {
    // A quantized output one step off passes with atol=1 (quantized cases' tolerance.txt), two do not.
    let one_step = Tolerance { rtol: 0.0, atol: 1.0 };
    assert_eq!(compare(&t(&[2], &[128u8, 0]), &t(&[2], &[127u8, 1]), one_step), Ok(()));
    assert_eq!(compare(&t(&[1], &[-128i8]), &t(&[1], &[-127i8]), one_step), Ok(()));
    let e = element(compare(&t(&[2], &[130u8, 0]), &t(&[2], &[128u8, 0]), one_step).unwrap_err());
    assert_eq!((e.diff, e.allowed), (Some(2.0), Some(1.0)));
    // Fractions of a step are no step: 1.9 allows one.
    assert!(compare(&t(&[1], &[3u8]), &t(&[1], &[1u8]), Tolerance { rtol: 0.0, atol: 1.9 }).is_err());
}

#[test]
fn dtype_shape_and_kind_must_match() {
    let m = cmp(&t(&[2], &[1.0f32, 2.0]), &t(&[2], &[1.0f64, 2.0])).unwrap_err();
    assert_eq!(m.kind, MismatchKind::DType { got: DType::F32, want: DType::F64 });
    let m = cmp(&t(&[1, 2], &[1.0f32, 2.0]), &t(&[2], &[1.0f32, 2.0])).unwrap_err();
    assert_eq!(m.kind, MismatchKind::Shape { got: vec![1, 2], want: vec![2] });
    let seq = Value::Sequence(Sequence { dtype: DType::F32, items: vec![] });
    let m = cmp(&seq, &t(&[1], &[1.0f32])).unwrap_err();
    assert!(matches!(m.kind, MismatchKind::Kind { .. }), "{m:?}");
}

#[test]
fn strings_compare_exactly() {
    let s = |v: &[&str]| {
        Value::Tensor(Tensor::from_strings(&[v.len()], v.iter().map(|s| s.to_string()).collect()).unwrap())
    };
    let e = element(cmp(&s(&["a", "bc"]), &s(&["a", "bd"])).unwrap_err());
    assert_eq!((e.flat, e.got.as_str(), e.want.as_str()), (1, "\"bc\"", "\"bd\""));
}

#[test]
fn sequences_compare_length_then_items() {
    let item = |v: f32| Tensor::from_slice(&[1], &[v]).unwrap();
    let seq = |items: Vec<Tensor>| Value::Sequence(Sequence { dtype: DType::F32, items });
    let m = cmp(&seq(vec![item(1.0)]), &seq(vec![item(1.0), item(2.0)])).unwrap_err();
    assert_eq!(m.kind, MismatchKind::Length { got: 1, want: 2 });
    let m = cmp(&seq(vec![item(1.0), item(3.0)]), &seq(vec![item(1.0), item(2.0)])).unwrap_err();
    assert_eq!(m.location, "item 1");
    assert!(m.to_string().starts_with("item 1 element [0] (flat 0): got 3, want 2"), "{m}");
    assert_eq!(cmp(&seq(vec![item(1.0)]), &seq(vec![item(1.0)])), Ok(()));
}

#[test]
fn optionals_compare_presence_then_content() {
    let ty = ValueType::tensor(DType::F32, &[1]);
    let empty = Value::Optional(None, ty.clone());
    let full = |v: f32| Value::Optional(Some(Box::new(t(&[1], &[v]))), ty.clone());
    assert_eq!(cmp(&empty, &empty), Ok(()));
    assert_eq!(cmp(&empty, &full(1.0)).unwrap_err().kind, MismatchKind::Presence { got: false, want: true });
    assert_eq!(cmp(&full(1.0), &empty).unwrap_err().kind, MismatchKind::Presence { got: true, want: false });
    assert_eq!(cmp(&full(1.0), &full(1.0)), Ok(()));
    assert_eq!(cmp(&full(1.0), &full(2.0)).unwrap_err().location, "optional value");
}

#[test]
fn the_worst_element_is_the_largest_excess_not_the_first_or_largest_diff() {
    // Element 0: |diff| 1.5, allowed ~1.0 -> excess 0.5. Element 1: |diff| 0.8, allowed 1e-7
    // -> excess ~0.8, the worst. Element 2 passes.
    let want = t(&[3, 1], &[1000.0f32, 0.0, 5.0]);
    let got = t(&[3, 1], &[1001.5f32, 0.8, 5.0]);
    let e = element(cmp(&got, &want).unwrap_err());
    assert_eq!(e.flat, 1);
    assert_eq!(e.index, vec![1, 0]);
    assert_eq!((e.got.as_str(), e.want.as_str()), ("0.8", "0"));
    assert_eq!((e.failing, e.total), (2, 3));
    // A non-finite mismatch outranks any finite one.
    let e = element(cmp(&t(&[3], &[5.0f32, f32::NAN, 100.0]), &t(&[3], &[0.0f32, 0.0, 0.0])).unwrap_err());
    assert_eq!(e.flat, 1);
}

#[test]
fn element_mismatch_reads_like_the_report_line() {
    let want = t(&[2, 4], &[0.0f32, 0.0, 0.0, 0.0, 0.0, 0.0, 1.25, 0.0]);
    let got = t(&[2, 4], &[0.0f32, 0.0, 0.0, 0.0, 0.0, 0.0, 1.5, 0.0]);
    let m = cmp(&got, &want).unwrap_err();
    assert_eq!(m.to_string(), "element [1,2] (flat 6): got 1.5, want 1.25, |diff| 0.25 > 1.25e-3");
}

fn write(dir: &Path, name: &str, msg: &impl Message) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, msg.encode_to_vec()).unwrap();
    p
}

#[test]
fn read_value_round_trips_tensor_sequence_and_optional() {
    let dir = tempfile::tempdir().unwrap();
    let a = Tensor::from_slice(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let b = Tensor::from_slice(&[1], &[7.0f32]).unwrap();
    let tensor_ty = ValueType::tensor(DType::F32, &[2, 3]);

    let p = write(dir.path(), "t.pb", &tensor_to_proto("x", &a));
    for ty in [&tensor_ty, &ValueType::Unknown] {
        let v = read_value(&p, ty).unwrap();
        assert_eq!(compare(&v, &Value::Tensor(a.clone()), Tolerance { rtol: 0.0, atol: 0.0 }), Ok(()));
        assert!(v.as_tensor().unwrap().is_aligned());
    }

    let seq_ty = ValueType::Sequence(Box::new(ValueType::Tensor(DType::F32, None)));
    let sp = SequenceProto {
        name: Some("s".into()),
        elem_type: Some(1),
        tensor_values: vec![tensor_to_proto("", &a), tensor_to_proto("", &b)],
        ..Default::default()
    };
    let p = write(dir.path(), "s.pb", &sp);
    let v = read_value(&p, &seq_ty).unwrap();
    let want = Value::Sequence(Sequence { dtype: DType::F32, items: vec![a.clone(), b.clone()] });
    assert_eq!(cmp(&v, &want), Ok(()));
    // An empty sequence takes its element type from the declaration.
    let p = write(dir.path(), "s0.pb", &SequenceProto { elem_type: Some(1), ..Default::default() });
    match read_value(&p, &seq_ty).unwrap() {
        Value::Sequence(s) => assert_eq!((s.dtype, s.items.len()), (DType::F32, 0)),
        other => panic!("{other:?}"),
    }

    let opt_ty = ValueType::Optional(Box::new(tensor_ty.clone()));
    let op = OptionalProto { elem_type: Some(1), tensor_value: Some(tensor_to_proto("", &a)), ..Default::default() };
    let p = write(dir.path(), "o.pb", &op);
    let v = read_value(&p, &opt_ty).unwrap();
    assert_eq!(cmp(&v, &Value::Optional(Some(Box::new(Value::Tensor(a.clone()))), tensor_ty.clone())), Ok(()));
    let p = write(dir.path(), "o0.pb", &OptionalProto { elem_type: Some(1), ..Default::default() });
    assert!(matches!(read_value(&p, &opt_ty).unwrap(), Value::Optional(None, _)));
    let opt_seq_ty = ValueType::Optional(Box::new(seq_ty.clone()));
    let p = write(
        dir.path(),
        "os.pb",
        &OptionalProto { elem_type: Some(3), sequence_value: Some(sp), ..Default::default() },
    );
    assert_eq!(cmp(&read_value(&p, &opt_seq_ty).unwrap(), &Value::Optional(Some(Box::new(want)), seq_ty)), Ok(()));
}

#[test]
fn read_value_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.pb");
    let e = read_value(&missing, &ValueType::Unknown).unwrap_err().to_string();
    assert!(e.contains("nope.pb"), "{e}");
    let bad = dir.path().join("bad.pb");
    std::fs::write(&bad, [0xffu8; 16]).unwrap();
    let e = read_value(&bad, &ValueType::Unknown).unwrap_err().to_string();
    assert!(e.contains("bad.pb") && e.contains("TensorProto"), "{e}");
    let map_ty = ValueType::Map(DType::I64, Box::new(ValueType::Tensor(DType::F32, None)));
    let e = read_value(&bad, &map_ty).unwrap_err();
    assert!(matches!(e, CaseError::Unsupported { .. }) && e.to_string().contains("map"), "{e}");
    // A tensor whose data does not fit its shape.
    let short = TensorProto { data_type: Some(1), dims: vec![3], float_data: vec![1.0], ..Default::default() };
    let p = write(dir.path(), "short.pb", &short);
    let e = read_value(&p, &ValueType::Unknown).unwrap_err().to_string();
    assert!(e.contains("short.pb"), "{e}");
}

#[test]
fn discover_takes_case_folders_and_folders_of_cases() {
    let root = tempfile::tempdir().unwrap();
    for case in ["test_b", "test_a"] {
        let d = root.path().join(case);
        std::fs::create_dir_all(d.join("test_data_set_10")).unwrap();
        std::fs::create_dir_all(d.join("test_data_set_2")).unwrap();
        std::fs::write(d.join("model.onnx"), b"").unwrap();
    }
    std::fs::create_dir_all(root.path().join("not_a_case")).unwrap();
    std::fs::write(root.path().join("README"), b"").unwrap();

    let cases = discover(&[root.path().to_path_buf()]).unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["test_a", "test_b"]);
    let sets: Vec<String> =
        cases[0].data_sets.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(sets, ["test_data_set_2", "test_data_set_10"]);

    let one = discover(&[root.path().join("test_b")]).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].name, "test_b");
    assert_eq!(one[0].dir, root.path().join("test_b"));

    let e = discover(&[root.path().join("not_a_case")]).unwrap_err().to_string();
    assert!(e.contains("not_a_case"), "{e}");
    assert!(discover(&[root.path().join("missing")]).is_err());
}

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models")
}

fn cpu() -> Vec<Provider> {
    vec![vinort::Cpu::default().into()]
}

#[test]
fn sample_model_passes_on_cpu() {
    let case = TestCase::from_dir(&models().join("mobilenetv2_tiny")).unwrap();
    assert_eq!(case.data_sets.len(), 1);
    let o = run_case(&case, cpu, Tolerance::default());
    assert_eq!(o.status, Status::Pass, "{}", format_line(&o));
    assert_eq!(format_line(&o), "PASS mobilenetv2_tiny");
    assert_eq!(o.note, None);
    assert!(!o.providers_used.is_empty());
    assert!(o.providers_used.iter().all(|(p, _)| p == "Cpu"), "{:?}", o.providers_used);
    assert!(o.providers_used.iter().any(|(_, ops)| ops.iter().any(|op| op == "Conv")), "{:?}", o.providers_used);
}

fn copy_case(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("test_data_set_0")).unwrap();
    std::fs::copy(from.join("model.onnx"), to.join("model.onnx")).unwrap();
    for e in std::fs::read_dir(from.join("test_data_set_0")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join("test_data_set_0").join(e.file_name())).unwrap();
    }
}

#[test]
fn corrupted_reference_fails_naming_the_output() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("mobilenet_corrupted");
    copy_case(&models().join("mobilenetv2_tiny"), &dir);
    let out = dir.join("test_data_set_0/output_0.pb");
    let (name, want) = vinort_ir::tensor_proto::decode_tensor(std::fs::read(&out).unwrap().into()).unwrap();
    let mut v = want.to_vec::<f32>().unwrap();
    v[3] += 1.0;
    let changed = Tensor::from_vec(want.shape(), v).unwrap();
    std::fs::write(&out, tensor_to_proto(&name, &changed).encode_to_vec()).unwrap();

    let o = run_case(&TestCase::from_dir(&dir).unwrap(), cpu, Tolerance::default());
    let Status::Fail(d) = &o.status else { panic!("expected a failure, got {o:?}") };
    assert!(d.starts_with("output 0 element "), "{d}");
    assert!(d.contains("(flat 3)"), "{d}");
    let line = format_line(&o);
    assert!(line.starts_with("FAIL mobilenet_corrupted: output 0 element"), "{line}");
}

/// A case with RandomUniformLike(x) and Relu(x) as outputs: references `u` and `r`.
fn random_case(dir: &Path, u: &[f32], r: &[f32]) {
    use vinort_ir::proto::onnx;
    let node = |op: &str, out: &str| onnx::NodeProto {
        op_type: Some(op.into()),
        name: Some(out.into()),
        input: vec!["x".into()],
        output: vec![out.into()],
        ..Default::default()
    };
    let vi = vinort_ir::proto::build::fixed_tensor_info;
    let graph = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![node("RandomUniformLike", "u"), node("Relu", "r")],
        input: vec![vi("x", 1, &[3])],
        output: vec![vi("u", 1, &[3]), vi("r", 1, &[3])],
        ..Default::default()
    };
    std::fs::create_dir_all(dir.join("test_data_set_0")).unwrap();
    let model = vinort_ir::proto::build::model(8, &[("", 17)], graph);
    std::fs::write(dir.join("model.onnx"), model.encode_to_vec()).unwrap();
    let x = Tensor::from_slice(&[3], &[-1.0f32, 0.5, 2.0]).unwrap();
    let data = dir.join("test_data_set_0");
    write(&data, "input_0.pb", &tensor_to_proto("x", &x));
    write(&data, "output_0.pb", &tensor_to_proto("u", &Tensor::from_slice(&[3], u).unwrap()));
    write(&data, "output_1.pb", &tensor_to_proto("r", &Tensor::from_slice(&[3], r).unwrap()));
}

#[test]
fn outputs_a_random_op_does_not_reach_are_compared_by_value() {
    let root = tempfile::tempdir().unwrap();
    // The random output's reference is any draw in [0, 1]: only its range is checked.
    random_case(&root.path().join("ok"), &[0.9, 0.1, 0.5], &[0.0, 0.5, 2.0]);
    let o = run_case(&TestCase::from_dir(&root.path().join("ok")).unwrap(), cpu, Tolerance::default());
    assert_eq!(o.status, Status::Pass, "{}", format_line(&o));
    assert_eq!(o.note.as_deref(), Some(RANDOM_NOTE));
    // A wrong Relu reference fails, although the model holds a random op.
    random_case(&root.path().join("wrong"), &[0.9, 0.1, 0.5], &[0.0, 0.5, 2.5]);
    let o = run_case(&TestCase::from_dir(&root.path().join("wrong")).unwrap(), cpu, Tolerance::default());
    let Status::Fail(d) = &o.status else { panic!("expected a failure, got {o:?}") };
    assert!(d.starts_with("output 1 element [2]"), "{d}");
}

#[test]
fn missing_reference_file_is_an_error_naming_it() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("gap");
    copy_case(&models().join("mobilenetv2_tiny"), &dir);
    std::fs::rename(dir.join("test_data_set_0/output_0.pb"), dir.join("test_data_set_0/output_1.pb")).unwrap();
    let o = run_case(&TestCase::from_dir(&dir).unwrap(), cpu, Tolerance::default());
    let Status::Error(m) = &o.status else { panic!("{o:?}") };
    assert!(m.contains("output_0.pb is missing"), "{m}");
}

#[test]
fn unsupported_nodes_are_an_error_naming_them() {
    let case = TestCase::from_dir(&models().join("unknown_op")).unwrap();
    assert!(case.data_sets.is_empty());
    let o = run_case(&case, cpu, Tolerance::default());
    let Status::Error(m) = &o.status else { panic!("expected an error, got {o:?}") };
    let line = format_line(&o);
    for node in ["fancy_0", "FancyOp", "not_a_real_op_0", "NotARealOp"] {
        assert!(line.contains(node), "{line}");
    }
    assert!(m.lines().count() > 1, "the full reasons follow the first line: {m}");
    assert!(!line.contains('\n'));
}

#[test]
fn panics_become_errors() {
    let case = TestCase::from_dir(&models().join("mobilenetv2_tiny")).unwrap();
    let o = run_case(&case, || panic!("provider list exploded"), Tolerance::default());
    assert_eq!(o.status, Status::Error("panic: provider list exploded".into()));
}

#[test]
fn random_outputs_are_checked_by_range() {
    let u = RandomRange::Between(-1.0, 2.0);
    let tol = Tolerance::default();
    assert_eq!(check_range(&t(&[3], &[-1.0f32, 0.5, 2.0]), &u, tol), Ok(()));
    let m = check_range(&t(&[3], &[-1.0f32, 2.5, 3.0]), &u, tol).unwrap_err();
    assert!(matches!(&m.kind, MismatchKind::OutOfRange(r) if r.flat == 1 && r.failing == 2), "{m:?}");
    assert!(m.to_string().contains("[-1, 2]"), "{m}");
    assert!(check_range(&t(&[1], &[f32::NAN]), &u, tol).is_err());
    assert_eq!(check_range(&t(&[2], &[0.0f32, 1.0]), &RandomRange::ZeroOrOne, tol), Ok(()));
    assert!(check_range(&t(&[2], &[0.0f32, 0.5]), &RandomRange::ZeroOrOne, tol).is_err());
    assert_eq!(check_range(&t(&[2], &[true, false]), &RandomRange::ZeroOrOne, tol), Ok(()));
    assert!(check_range(&t(&[1], &[f32::INFINITY]), &RandomRange::Finite, tol).is_err());
    assert_eq!(check_range(&t(&[1], &[-3.0f32]), &RandomRange::Finite, tol), Ok(()));
    assert_eq!(check_range(&t(&[2], &[0i64, 4]), &RandomRange::Index(Some(5)), tol), Ok(()));
    assert!(check_range(&t(&[1], &[5i64]), &RandomRange::Index(Some(5)), tol).is_err());
    assert!(check_range(&t(&[1], &[-1i32]), &RandomRange::Index(None), tol).is_err());
    assert_eq!(check_range(&t(&[1], &[123.0f32]), &RandomRange::Any, tol), Ok(()));
}

#[test]
fn random_ops_are_found_with_their_ranges() {
    use vinort_ir::proto::onnx;
    let attr_f = |name: &str, f: f32| onnx::AttributeProto {
        name: Some(name.into()),
        f: Some(f),
        r#type: Some(onnx::attribute_proto::AttributeType::Float as i32),
        ..Default::default()
    };
    let node = |op: &str, ins: &[&str], out: &str, attrs: Vec<onnx::AttributeProto>| onnx::NodeProto {
        op_type: Some(op.into()),
        name: Some(out.into()),
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: vec![out.into()],
        attribute: attrs,
        ..Default::default()
    };
    let vi = vinort_ir::proto::build::fixed_tensor_info;
    let graph = onnx::GraphProto {
        name: Some("g".into()),
        node: vec![
            node("RandomUniformLike", &["x"], "u", vec![attr_f("low", -2.0), attr_f("high", 3.0)]),
            node("Multinomial", &["x"], "m", vec![]),
            node("Relu", &["x"], "r", vec![]),
        ],
        input: vec![vi("x", 1, &[2, 7])],
        output: vec![vi("u", 1, &[2, 7]), vi("m", 6, &[2, 1]), vi("r", 1, &[2, 7])],
        ..Default::default()
    };
    let model = vinort_ir::proto::build::model(8, &[("", 17)], graph);
    let model = vinort_ir::Model::from_bytes(model.encode_to_vec()).unwrap();
    let g = &model.graph;
    assert!(g.topo_order().iter().any(|n| is_random(g.node(*n))));
    // Only the outputs a random op reaches escape a value check: Relu's does not.
    let random = random_values(g);
    let reached: Vec<bool> = g.outputs().iter().map(|o| random.contains(o)).collect();
    assert_eq!(reached, [true, true, false]);
    let fed = HashMap::new();
    let ranges: Vec<RandomRange> = g.outputs().iter().map(|o| output_range(g, *o, &fed).unwrap()).collect();
    assert_eq!(ranges, [RandomRange::Between(-2.0, 3.0), RandomRange::Index(Some(7)), RandomRange::Any]);
}

#[test]
fn report_lines() {
    let o = |status: Status| CaseOutcome {
        name: "test_x".into(),
        status,
        note: None,
        providers_used: vec![],
        path: String::new(),
    };
    assert_eq!(format_line(&o(Status::Pass)), "PASS test_x");
    assert_eq!(format_line(&o(Status::Error("boom\nmore detail".into()))), "ERROR test_x: boom");
    assert_eq!(format_line(&o(Status::Fail("output 0 shape".into()))), "FAIL test_x: output 0 shape");
    assert_eq!(format_line(&o(Status::Skip("why".into()))), "SKIP test_x: why");
    let mut noted = o(Status::Pass);
    noted.note = Some(RANDOM_NOTE.into());
    assert_eq!(format_line(&noted), format!("PASS test_x ({RANDOM_NOTE})"));

    assert_eq!(summary_line(&[]), "0 passed, 0 failed");
    let all =
        [o(Status::Pass), o(Status::Pass), o(Status::Fail("f".into())), o(Status::Error("e".into())), o(Status::Pass)];
    assert_eq!(summary_line(&all), "3 passed, 2 failed");
    let with_skip = [o(Status::Pass), o(Status::Skip("s".into())), o(Status::Error("e".into()))];
    assert_eq!(summary_line(&with_skip), "1 passed, 1 failed, 1 skipped");
}
