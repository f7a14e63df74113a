"""The error tree: every exception is in plugin_sdk.errors, under MemsdkError and an area base."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import plugin_sdk
from plugin_sdk import errors

AREA_BASES = (
    errors.StoreError,
    errors.CategoryError,
    errors.ModelError,
    errors.CompositeError,
    errors.GridError,
    errors.RetainError,
    errors.ProposalError,
    errors.StageError,
    errors.TranscriptError,
    errors.HostError,
)


def all_modules() -> list[ModuleType]:
    names = [info.name for info in pkgutil.walk_packages(plugin_sdk.__path__, "plugin_sdk.")]
    return [plugin_sdk, *(importlib.import_module(name) for name in names)]


def defined_in(module: ModuleType) -> list[type]:
    """The classes whose definition is in ``module`` (not the ones it imports)."""
    return [
        value
        for value in vars(module).values()
        if inspect.isclass(value) and value.__module__ == module.__name__
    ]


def tree() -> list[type[BaseException]]:
    return [cls for cls in defined_in(errors) if issubclass(cls, BaseException)]


def test_every_exception_under_plugin_sdk_is_defined_in_errors_and_is_a_memsdk_error():
    # The one exception: how the command line prints a usage error (one line,
    # exit 2). It is click's way out, not an error memsdk raises.
    from plugin_sdk.cli import UsageProblem

    elsewhere = []
    for module in all_modules():
        for cls in defined_in(module):
            if not issubclass(cls, BaseException) or cls is UsageProblem:
                continue
            assert issubclass(cls, errors.MemsdkError), f"{cls.__qualname__} is no MemsdkError"
            if module is not errors:
                elsewhere.append(f"{module.__name__}.{cls.__qualname__}")
    assert elsewhere == []


def test_there_is_one_wrong_status_for_the_queue_and_for_review():
    named = {
        cls
        for module in all_modules()
        for cls in defined_in(module)
        if cls.__name__ == "WrongStatus"
    }
    assert named == {errors.WrongStatus}
    # The approval queue raises it (test_queue), and so does dark-matter review
    # (test_retain); the queue's callers catch it as a QueueError.
    assert issubclass(errors.WrongStatus, errors.QueueError)
    assert issubclass(errors.WrongStatus, errors.RetainError)


#: The errors a host catches, exported from ``plugin_sdk`` too (docs/host-guide.md, "Errors").
HOST_CATCHES = {
    "MemsdkError",
    "StoreError",
    "StoreBusy",
    "SchemaTooNew",
    "UnknownCategory",
    "NotFound",
    "InvalidMemory",
    "PackError",
    "ModelError",
    "NoModel",
}


def test_every_error_is_listed_in_errors_and_only_the_handful_a_host_catches_at_the_front_door():
    assert sorted(errors.__all__) == sorted(cls.__name__ for cls in tree())
    at_front = {name for name in plugin_sdk.__all__ if name in errors.__all__}
    assert at_front == HOST_CATCHES
    for name in HOST_CATCHES:
        assert getattr(plugin_sdk, name) is getattr(errors, name)
    assert not hasattr(plugin_sdk, "DuplicateEntity")  # an area's error: plugin_sdk.errors only


def test_every_error_sits_under_an_area_base_and_says_when_it_is_raised():
    for base in AREA_BASES:
        assert errors.MemsdkError in base.__bases__, base
    for cls in tree():
        assert cls.__doc__ and cls.__doc__.strip(), f"{cls.__name__} has no docstring"
        if cls is not errors.MemsdkError:
            assert issubclass(cls, AREA_BASES), f"{cls.__name__} is under no area base"


@pytest.mark.parametrize(
    "cls",
    [
        errors.UnknownCategory,
        errors.DuplicateMemory,
        errors.InvalidMemory,
        errors.MergeRefused,
        errors.PackError,
        errors.PackConflict,
        errors.MigrationRequired,
        errors.InvalidCriteria,
        errors.ModelConflict,
        errors.CompositeError,
        errors.GridError,
        errors.InvalidEntityName,
        errors.DuplicateEntity,
        errors.InvalidObservation,
        errors.InvalidProposal,
        errors.UnknownProposalCategory,
        errors.QueueError,
        errors.WrongStatus,
        errors.InvalidTranscript,
        errors.TranscriptError,
        errors.ToolError,
    ],
)
def test_errors_callers_catch_as_value_error_still_are(cls):
    assert issubclass(cls, ValueError)


def test_not_found_is_still_a_lookup_error():
    assert issubclass(errors.NotFound, LookupError)


def test_errors_with_fields_keep_them():
    pack = errors.PackError("ops.toml", "no name", "pack.name")
    assert (pack.source, pack.path, pack.reason) == ("ops.toml", "pack.name", "no name")
    assert str(pack) == "invalid pack ops.toml at pack.name: no name"
    unknown = errors.UnknownProposalCategory("x", ["b", "a"], where="memory_entry add")
    # the names as given: callers pass the store's priority order, which is kept
    assert isinstance(unknown, errors.InvalidProposal) and unknown.known == ["b", "a"]
    assert str(unknown) == (
        "memory_entry add: unknown category 'x'; this store's categories are: b, a"
    )
    observation = errors.InvalidObservation("not a date", "timestamp")
    assert (observation.reason, observation.path, str(observation)) == (
        "not a date",
        "timestamp",
        "timestamp: not a date",
    )
    duplicate = errors.DuplicateMemory(3, 1)
    assert (duplicate.memory_id, duplicate.other_id) == (3, 1)
