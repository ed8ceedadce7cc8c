"""What spans the owners of a data root (or of a cluster, on its shared database): durable jobs, the run index,
bulk rollback, operator actions; ``sql.py`` is their one SQL layer (SQLite or PostgreSQL)."""

from __future__ import annotations

from .bulk import (
    JOB_KIND,
    MAX_BULK_OWNERS,
    MAX_CONFLICTS_SHOWN,
    BulkPreview,
    OwnerPlan,
    Part,
    StepFailed,
    handler,
    job_view,
    owner_rows,
    owner_step,
    preview,
    rollback_part,
    select,
    submit,
)
from .erasure import ERASE, FORGET, Erasure, copy_time, erase_jobs, erase_rows, parse_target
from .jobs import JobStore, validate_job_id
from .jobtypes import (
    IMPORT_CHAT,
    JOB_STATES,
    JOBS_FILE,
    MEMORIZE,
    UNFINISHED,
    Handler,
    Job,
    JobPage,
    JobQuery,
    Limits,
    RetryLater,
    Step,
)
from .memorizejob import MemorizeRetry, memorize_handler, submit_memorize
from .operations import MAX_RUNS_PAGE, Fleet, job_visible
from .pgpool import set_pool_size
from .probation import APPROVE_JOB, DISCARD_JOB, JOB_KINDS, Probation, settle_part, staged_handler, staged_job_view
from .runindex import INDEX_PATH, RunIndex
from .runner import JOB_THREADS, HostJobs, JobRunner
from .runtypes import (
    MAX_FIELD,
    OwnerCount,
    OwnerCountPage,
    RunPage,
    RunQuery,
    RunRow,
    RunSpan,
    StagedRow,
    merge_pages,
    row_cursor,
)
from .sql import Database, is_url
from .staged import STAGED_PATH, StagedIndex

__all__ = [
    "MEMORIZE", "IMPORT_CHAT", "owner_rows", "owner_step", "job_visible", "Erasure", "ERASE", "FORGET", "copy_time",
    "parse_target",
    "erase_jobs", "erase_rows", "set_pool_size",
    "RunIndex",
    "RunQuery",
    "RunRow",
    "RunSpan",
    "RunPage",
    "OwnerCount",
    "OwnerCountPage",
    "INDEX_PATH",
    "MAX_FIELD",
    "row_cursor",
    "merge_pages",
    "JobStore",
    "JobRunner",
    "HostJobs",
    "JOB_THREADS",
    "Job",
    "JobQuery",
    "JobPage",
    "Limits",
    "Database",
    "is_url",
    "Step",
    "RetryLater",
    "Handler",
    "memorize_handler",
    "MemorizeRetry",
    "submit_memorize",
    "validate_job_id",
    "JOBS_FILE",
    "JOB_STATES",
    "UNFINISHED",
    "Part",
    "OwnerPlan",
    "BulkPreview",
    "select",
    "preview",
    "rollback_part",
    "submit",
    "handler",
    "job_view",
    "StepFailed",
    "MAX_BULK_OWNERS",
    "MAX_CONFLICTS_SHOWN",
    "JOB_KIND",
    "Fleet",
    "MAX_RUNS_PAGE",
    "StagedIndex",
    "StagedRow",
    "STAGED_PATH",
    "Probation", "APPROVE_JOB", "DISCARD_JOB", "JOB_KINDS", "settle_part", "staged_handler", "staged_job_view",
]
