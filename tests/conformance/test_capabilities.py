"""What a repository declares about itself is what it does: its capabilities are
``Capability`` members, a declared capability comes with its protocol, the vector role is
there exactly with ``Capability.VECTORS``, and the forensic search that backs the erasure
tests finds what is stored and nothing that is not (so that "nothing found" after an
erasure means something)."""

from __future__ import annotations

import pytest
from conformance_builders import event, found_in_storage, memory

from trueheart_core import TrueHeart
from trueheart_core.ports import (
    Capability,
    Repository,
    SupportsBackup,
    SupportsForensics,
    SupportsStorageSizes,
)


def test_capabilities_are_a_stable_set_of_capability_members(repository: Repository) -> None:
    declared = repository.capabilities
    assert isinstance(declared, frozenset)
    assert all(isinstance(capability, Capability) for capability in declared)
    assert repository.capabilities == declared


@pytest.mark.parametrize(
    ("capability", "protocol"),
    [
        pytest.param(
            Capability.BACKUP,
            SupportsBackup,
            marks=pytest.mark.requires(Capability.BACKUP),
            id="backup",
        ),
        pytest.param(
            Capability.FORENSICS,
            SupportsForensics,
            marks=pytest.mark.requires(Capability.FORENSICS),
            id="forensics",
        ),
        pytest.param(
            Capability.STORAGE_SIZES,
            SupportsStorageSizes,
            marks=pytest.mark.requires(Capability.STORAGE_SIZES),
            id="storage_sizes",
        ),
    ],
)
def test_a_declared_capability_comes_with_its_protocol(
    repository: Repository, capability: Capability, protocol: type
) -> None:
    assert capability in repository.capabilities
    assert isinstance(repository, protocol)


def test_units_of_work_have_the_vector_role_exactly_with_the_capability(
    repository: Repository,
) -> None:
    with repository.unit_of_work("read", write=False) as uow:
        has_vectors = uow.vectors is not None
    assert has_vectors == (Capability.VECTORS in repository.capabilities)


@pytest.mark.requires(Capability.FORENSICS)
def test_the_forensic_search_finds_what_is_stored_and_nothing_else(
    repository: Repository, service: TrueHeart
) -> None:
    assert isinstance(repository, SupportsForensics)
    assert repository.residue([]) == frozenset()
    service.ingest_event(event(content="stored raw body zqxforensicraw"))
    service.materialize_once(memory(content="stored memory zqxforensicmem"))
    wanted = ["zqxforensicraw", "zqxforensicmem", "zqxforensicnever"]
    assert found_in_storage(repository, wanted) == ["zqxforensicraw", "zqxforensicmem"]
    assert repository.residue([b"zqxforensicnever"]) == frozenset()
