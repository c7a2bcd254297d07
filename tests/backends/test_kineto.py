"""backends.kineto against synthetic torch events, known answers: a runtime's host-typed activity told apart by its
Kineto activity type and its time given back to the op it ran in; device time torch's profiler stubs put on host
ops (legacy kernels named as the op) told from correlated device kernels, nested stubs counted once."""

from __future__ import annotations

from types import SimpleNamespace

from torch.autograd import DeviceType

from neuronexp.backends.kineto import correlated_us, host_device_time, row_key, runtime_rows, stub_us

APART = ("privateuse1_runtime", "privateuse1_driver")


def _evt(
    name: str, cpu: float = 10.0, kernels: tuple = (), legacy: bool = False, activity: str = "cpu_op", parent=None
):
    evt = SimpleNamespace(
        name=name,
        key=name,
        device_type=DeviceType.CPU,
        is_async=False,
        is_legacy=legacy,
        is_user_annotation=False,
        input_shapes=[],
        activity_type=activity,
        cpu_time_total=cpu,
        cpu_children=[],
        kernels=[SimpleNamespace(name=k, duration=us) for k, us in kernels],
    )
    if parent is not None:
        parent.cpu_children.append(evt)
    return evt


def test_runtime_activity_is_set_apart_and_its_time_given_back_to_its_op() -> None:
    mul = _evt("aten::mul", cpu=10.0)
    call = _evt("NeuronRuntime::execute", cpu=4.0, activity="privateuse1_runtime", parent=mul)
    driver = _evt("driver::submit", cpu=1.0, activity="privateuse1_driver")
    found = runtime_rows([mul, call, driver], APART, by_shapes=False)
    assert found.keys == {row_key(call, False), row_key(driver, False)}
    assert found.nested_us == {row_key(mul, False): 4.0}
    assert runtime_rows([mul, call], (), by_shapes=False).keys == set()  # a backend without such activities


def test_stub_time_on_host_rows_is_told_from_correlated_kernels_and_counted_once_when_nested() -> None:
    # aten::linear's stub spans its child aten::addmm's; addmm also has a correlated kernel of 7 us.
    linear = _evt("aten::linear", kernels=(("aten::linear", 50.0),), legacy=True)
    addmm = _evt("aten::addmm", kernels=(("aten::addmm", 40.0), ("gemm", 7.0)), legacy=True, parent=linear)
    relu = _evt("aten::relu", kernels=(("aten::relu", 5.0),), legacy=True)
    plain = _evt("aten::view")
    events = [linear, addmm, relu, plain]
    assert (stub_us(addmm), stub_us(plain), stub_us(_evt("x", kernels=(("x", 3.0),)))) == (40.0, 0.0, 0.0)
    found = host_device_time(events, APART)
    assert found.per_op == {"aten::linear": 10.0, "aten::addmm": 40.0, "aten::relu": 5.0}
    assert (found.total_us, found.executions) == (55.0, 2)  # the outermost stubs; addmm and relu did the work
    assert correlated_us(events) == {"aten::addmm": 7.0}


def test_rows_are_keyed_as_key_averages_groups_them() -> None:
    """By name, legacy and annotation flags, and the input shapes only when grouped by them; an event without the
    flags (an older torch) is neither legacy nor an annotation."""
    a, b = _evt("aten::mul"), _evt("aten::mul", legacy=True)
    a.input_shapes, b.input_shapes = [[1, 2]], [[3]]
    assert row_key(a, True) == ("aten::mul", False, False, "[[1, 2]]") and row_key(a, False)[3] == ""
    assert row_key(b, False) == ("aten::mul", True, False, "")
    bare = SimpleNamespace(key="aten::add", input_shapes=[])
    assert row_key(bare, False) == ("aten::add", False, False, "")


def test_runtime_rows_sum_every_call_and_read_only_synchronous_host_events() -> None:
    device = _evt("kernel", activity="privateuse1_runtime")
    device.device_type = DeviceType.PrivateUse1  # a device row: not the host's
    later = _evt("aten::mul", cpu=10.0)
    _evt("NeuronRuntime::execute", cpu=4.0, activity="privateuse1_runtime", parent=later)
    again = _evt("aten::mul", cpu=10.0)
    _evt("NeuronRuntime::execute", cpu=3.0, activity="privateuse1_runtime", parent=again)
    _evt("aten::view", parent=again)  # a host child: not runtime work
    lonely = _evt("aten::relu")
    lonely.cpu_children = None  # an event torch left without children
    async_call = _evt("NeuronRuntime::async", activity="privateuse1_runtime")
    async_call.is_async = True
    text_typed = _evt("driver::submit", activity="privateuse1_driver")
    text_typed.device_type = "CPU"  # a device type given by name
    found = runtime_rows([device, later, again, lonely, async_call, text_typed], APART, by_shapes=False)
    assert found.nested_us == {row_key(later, False): 7.0}
    assert found.keys == {row_key(text_typed, False)}


def test_stub_time_through_an_op_without_one_and_children_longer_than_the_stub() -> None:
    # aten::linear's stub (50 us) spans aten::view (no stub), whose child aten::addmm's stub is 60 us: nothing is
    # linear's own; a set-apart runtime child's stub is not an op's.
    linear = _evt("aten::linear", kernels=(("aten::linear", 50.0),), legacy=True)
    view = _evt("aten::view", parent=linear)
    addmm = _evt("aten::addmm", kernels=(("aten::addmm", 60.0),), legacy=True)
    view.cpu_children = [addmm]
    runtime = _evt("rt", kernels=(("rt", 9.0),), legacy=True, activity="privateuse1_runtime", parent=linear)
    found = host_device_time([linear, view, addmm, runtime], APART)
    assert found.per_op == {"aten::linear": 0.0, "aten::addmm": 60.0}
    assert (found.total_us, found.executions) == (60.0, 1)
    twice = host_device_time([_evt("aten::relu", kernels=(("aten::relu", 5.0),), legacy=True)] * 2, APART)
    assert (twice.per_op, twice.total_us, twice.executions) == ({"aten::relu": 10.0}, 10.0, 2)
    device = _evt("aten::relu", kernels=(("aten::relu", 5.0),), legacy=True)
    device.device_type = DeviceType.PrivateUse1
    assert host_device_time([device], APART).per_op == {}  # device rows carry no stub of a host op


def test_correlated_kernels_add_up_over_calls_and_a_stub_alone_is_none() -> None:
    mm = _evt("aten::mm", kernels=(("gemm", 7.0), ("aten::mm", 40.0)), legacy=True)
    again = _evt("aten::mm", kernels=(("gemm", 3.0),))
    stub_only = _evt("aten::relu", kernels=(("aten::relu", 5.0),), legacy=True)
    device = _evt("gemm", kernels=(("gemm", 7.0),))
    device.device_type = DeviceType.PrivateUse1
    assert correlated_us([mm, again, stub_only, device]) == {"aten::mm": 10.0}


def test_user_annotations_and_shapes_key_the_runtime_rows() -> None:
    mark = _evt("my_region")
    mark.is_user_annotation = True
    assert row_key(mark, False) == ("my_region", False, True, "")
    mul = _evt("aten::mul")
    mul.input_shapes = [[2, 2]]
    call = _evt("NeuronRuntime::execute", cpu=4.0, activity="privateuse1_runtime", parent=mul)
    call.input_shapes = [[8]]
    found = runtime_rows([mul, call], APART, by_shapes=True)
    assert found.keys == {("NeuronRuntime::execute", False, False, "[[8]]")}
    assert found.nested_us == {("aten::mul", False, False, "[[2, 2]]"): 4.0}


def test_an_event_without_an_activity_type_is_an_op() -> None:
    """An event from a torch whose events carry no Kineto activity type: never set apart."""
    old = SimpleNamespace(**{k: v for k, v in vars(_evt("aten::mul")).items() if k != "activity_type"})
    assert runtime_rows([old], APART, by_shapes=False).keys == set()


def test_runtime_work_deep_inside_an_op_is_not_its_device_time_and_short_stubs_count() -> None:
    # aten::linear's stub (100 us) spans a runtime call (9 us, set apart) and aten::view (no stub), which holds
    # aten::addmm (stub 30 us, with a child of its own) and another runtime call: linear's own is 100 - 30.
    linear = _evt("aten::linear", kernels=(("aten::linear", 100.0),), legacy=True)
    _evt("rt", kernels=(("rt", 9.0),), legacy=True, activity="privateuse1_runtime", parent=linear)
    view = _evt("aten::view", parent=linear)
    addmm = _evt("aten::addmm", kernels=(("aten::addmm", 30.0),), legacy=True, parent=view)
    _evt("aten::copy_", parent=addmm)
    _evt("rt", kernels=(("rt", 9.0),), legacy=True, activity="privateuse1_runtime", parent=view)
    found = host_device_time([linear], APART)
    assert (found.per_op, found.total_us, found.executions) == ({"aten::linear": 70.0}, 70.0, 0)
    # A sub-microsecond stub is device time too, and a parent over one is not an execution of its own.
    outer = _evt("aten::add", kernels=(("aten::add", 2.0),), legacy=True)
    _evt("aten::add_", kernels=(("aten::add_", 0.5),), legacy=True, parent=outer)
    short = host_device_time([outer, *outer.cpu_children], APART)
    assert (short.per_op, short.total_us, short.executions) == ({"aten::add": 1.5, "aten::add_": 0.5}, 2.0, 1)
    assert correlated_us([_evt("aten::mm", kernels=(("gemm", 0.5),))]) == {"aten::mm": 0.5}
