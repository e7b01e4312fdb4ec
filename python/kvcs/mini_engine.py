"""A minimal engine loop that drives a model and a KV connector in vLLM's order (one request per
step, prefill only): the scheduler asks the connector for external tokens, allocates blocks, builds
the connector metadata; the worker binds it, starts the load, runs the forward pass (the model
calls wait_for_layer_load / save_kv_layer per layer), waits for the save, and asks for blocks that
failed to load. Those are recomputed as vLLM does: from the first failed block on, in a second
pass without the connector's load."""
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

from .connector import KVCSConnectorMetadata


@dataclass
class StepReport:
    external_tokens: int = 0       # tokens the connector loaded (promised)
    computed_from: int = 0         # first position the forward pass computed
    load_errors: set = field(default_factory=set)  # engine block ids
    load_sources: dict = field(default_factory=dict)  # engine block id -> {"relay", "store", ...}
    load_failures: dict = field(default_factory=dict)  # request id -> {engine block id: reason}
    block_ids: list = field(default_factory=list)  # the request's engine blocks, in prompt order
    recomputed_from: int = None    # first position of the recompute pass, if any
    seconds: float = 0.0
    timeline: list = field(default_factory=list)  # (layer, wait_start, wait_end, compute_end)


class MiniEngine:
    def __init__(self, model, scheduler, worker, num_blocks, block_tokens):
        self.model, self.scheduler, self.worker = model, scheduler, worker
        self.block_tokens = block_tokens
        self.kv_caches = model.new_kv_caches(num_blocks, block_tokens)
        if worker is not None:
            worker.register_kv_caches(self.kv_caches)
        self.free_blocks = list(range(num_blocks))

    def _allocate(self, n):
        if n > len(self.free_blocks):
            raise RuntimeError("out of KV blocks")
        # Hand out blocks from the end, so a request's blocks are not 0, 1, 2...: the connector
        # must follow the block table.
        ids, self.free_blocks = self.free_blocks[-n:][::-1], self.free_blocks[:-n]
        return ids

    def prefill(self, request_id, tokens):
        """Next-token logits of the prompt, with the report of what the connector did."""
        rep = StepReport()
        t0 = time.perf_counter()
        req = SimpleNamespace(request_id=request_id, prompt_token_ids=list(tokens))
        b = self.block_tokens
        ids = self._allocate(-(-len(tokens) // b))
        rep.block_ids = list(ids)
        ext = 0
        if self.scheduler is not None:
            ext, is_async = self.scheduler.get_num_new_matched_tokens(req, 0)
            assert not is_async
            self.scheduler.update_state_after_alloc(req, ids, ext)
            new = SimpleNamespace(req_id=request_id, prompt_token_ids=list(tokens),
                                  block_ids=(list(ids),), num_computed_tokens=ext)
            meta = self.scheduler.build_connector_meta(
                SimpleNamespace(scheduled_new_reqs=[new]))
            self.worker.bind_connector_metadata(meta)
            self.worker.start_load_kv(None)
        rep.external_tokens = rep.computed_from = ext
        logits = self.model.forward(tokens, ext, ids, self.kv_caches, self.worker,
                                    timeline=rep.timeline)
        if self.worker is not None:
            self.worker.wait_for_save()
            self.worker.get_finished(set())
            self.worker.clear_connector_metadata()
            rep.load_errors = self.worker.get_block_ids_with_load_errors()
            rep.load_sources = self.worker.get_block_load_sources()
            rep.load_failures = self.worker.get_load_failures()
            if rep.load_errors:
                first_bad = min(ids.index(x) for x in rep.load_errors)
                rep.recomputed_from = first_bad * b
                self.worker.bind_connector_metadata(KVCSConnectorMetadata())
                logits = self.model.forward(tokens, rep.recomputed_from, ids, self.kv_caches,
                                            self.worker)
                self.worker.wait_for_save()
                self.worker.clear_connector_metadata()
            self.scheduler.request_finished(req, ids)
        self.free_blocks.extend(ids)
        rep.seconds = time.perf_counter() - t0
        return logits, rep
