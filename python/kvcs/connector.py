"""KVCSConnector: a KV connector with vLLM's KVConnectorBase_V1 method names and semantics
(shared/specs/engine-connector.md), over the kvcs engine API. It needs no vLLM: the scheduler and
worker objects it is handed need only the attributes named below, which vLLM's own objects have.

Scheduler side (role SCHEDULER):
  get_num_new_matched_tokens(request, num_computed_tokens) -> (tokens, False)
      asks the store or relay (kvcs lookup) how many whole blocks beyond the local hit are loadable; no
      side effect but a remembered answer; never the whole prompt (the engine must compute at
      least one token to sample). Loads are layer-wise inside the forward pass, so never async.
  update_state_after_alloc(request, blocks, num_external_tokens)
      remembers which engine blocks the external tokens go to.
  build_connector_meta(scheduler_output) -> KVCSConnectorMetadata
      per newly scheduled request: what to load (blocks, engine block ids) and what to save
      (the full blocks the store does not hold yet). Does not modify its input.
  request_finished(request, block_ids) -> (False, None)
      saves copy each layer out of the paged buffer when it is computed, so blocks are never
      held for an asynchronous save.

Worker side (role WORKER), in forward-pass order:
  register_kv_caches({layer_name: tensor[2, num_blocks, block_tokens, kv_heads, head_dim]})
  bind_connector_metadata(meta); start_load_kv(forward_context): starts one kvcs load per request,
      which streams every layer into the registered buffers in the background (the store keeps
      at least two layers in flight: the HTTP stream runs ahead, the same-host ring has 2 slots);
  wait_for_layer_load(layer_name): blocks until that layer is in place for every request;
      blocks that failed (missing, corrupt) are recorded per block;
  save_kv_layer(layer_name, kv_layer, attn_metadata): copies that layer of the blocks to save;
  wait_for_save(): one aggregated PUT per request (a request whose load failed saves nothing:
      its suffix was computed over a bad prefix); get_finished(ids) -> (None, None);
  get_block_ids_with_load_errors() -> set of engine block ids (then cleared): the engine
      recomputes from the first of them. With recompute_ns_per_token_layer, a load the client
      predicts slower than recomputing (its measured rate over the path) is not started and
      every block of the request is listed here at once ("predicted load X ms > recompute Y ms").
  get_load_failures() -> {request_id: {engine block id: reason}} for the same blocks (then
      cleared): why each failed, from the first layer it failed in ("layer 3: ... deadline of
      1000 ms passed ..."; a MOQT load past its deadline, see recompute_ns_per_token_layer).
      Not a vLLM method.
  get_block_load_sources() -> {engine block id: {"relay" | "store" | "holder" | "recompute", ...}}
      over the layers loaded since the last call (then cleared): where each block's layers came
      from (a MOQT load recovers what the relay did not deliver from the store when one is
      configured, then from the KVSP HTTP holders the index lists: "holder"). Not a vLLM method.

Request objects need request_id and prompt_token_ids; blocks (update_state_after_alloc) are a
list of engine block ids or have get_block_ids() (vLLM's KVCacheBlocks); scheduler_output has
scheduled_new_reqs, each with req_id, prompt_token_ids, block_ids (list, or tuple of lists) and
num_computed_tokens.
"""
import enum
import threading
from dataclasses import dataclass, field

from _kvcs_native import Client, KvcsError

from .buffers import as_buffer, layer_views, paged_layout


class KVConnectorRole(enum.Enum):
    SCHEDULER = 0
    WORKER = 1


@dataclass
class KVCSConfig:
    """What the connector needs; from vLLM: kv_transfer_config.kv_connector_extra_config."""
    store_url: str          # None: no store (relay_url then required)
    access_key: str
    secret_key: str
    descriptor: dict
    bucket: str = "kvcache"
    scope_key: bytes = None
    shm_socket: str = None
    relay_url: str = None
    index_url: str = None
    index_token: str = None         # the index's bearer token (kvcs token)
    create_bucket: bool = True
    compute_us_per_layer: int = 0   # scheduling inputs of every load (objectcache §3)
    stall_target_us: int = 0
    recompute_ns_per_token_layer: int = 0  # what recomputing costs: bounds a MOQT load (kvcs.h)
    relay_ca_file: str = None       # the relay's TLS (relay_url): a CA bundle,
    relay_insecure: bool = False    # or, in development, any certificate
    store_ca_file: str = None       # an https store_url's TLS: a CA bundle,
    store_insecure: bool = False    # or, in development, any certificate

    @staticmethod
    def from_any(config):
        if isinstance(config, KVCSConfig):
            return config
        if isinstance(config, dict):
            return KVCSConfig(**config)
        extra = getattr(getattr(config, "kv_transfer_config", None),
                        "kv_connector_extra_config", None)
        if extra is None:
            raise ValueError("KVCSConnector: pass a KVCSConfig, a dict, or a vllm_config whose "
                             "kv_transfer_config.kv_connector_extra_config holds one")
        return KVCSConfig(**extra)

    def client(self):
        return Client(self.store_url, self.access_key, self.secret_key, self.descriptor,
                      bucket=self.bucket, scope_key=self.scope_key, shm_socket=self.shm_socket,
                      create_bucket=self.create_bucket, relay_url=self.relay_url,
                      index_url=self.index_url, compute_us_per_layer=self.compute_us_per_layer,
                      stall_target_us=self.stall_target_us,
                      relay_ca_file=self.relay_ca_file, relay_insecure=self.relay_insecure,
                      index_token=self.index_token,
                      recompute_ns_per_token_layer=self.recompute_ns_per_token_layer,
                      store_ca_file=self.store_ca_file, store_insecure=self.store_insecure)


@dataclass
class ReqMeta:
    request_id: str
    token_ids: list
    block_ids: list          # engine block of every prompt block, in order
    load_first_block: int = 0
    load_blocks: int = 0     # blocks to load, from load_first_block
    save_first_block: int = 0
    save_blocks: int = 0     # blocks to save, from save_first_block


@dataclass
class KVCSConnectorMetadata:
    requests: list = field(default_factory=list)


def _block_ids(blocks):
    if hasattr(blocks, "get_block_ids"):
        blocks = blocks.get_block_ids()
    if isinstance(blocks, tuple):  # one list per KV cache group; kvcs uses the first
        blocks = blocks[0]
    return [int(b) for b in blocks]


class KVCSConnector:
    def __init__(self, config, role=KVConnectorRole.WORKER):
        self.config = KVCSConfig.from_any(config)
        self.role = role
        self.client = self.config.client()
        self.block_tokens = self.client.block_tokens
        d = self.config.descriptor
        self.kv_heads, self.head_dim = int(d["kv_heads"]), int(d["head_dim"])
        # Scheduler state.
        self._stored_blocks = {}    # request_id -> blocks the store holds (lookup answer)
        self._local_blocks = {}     # request_id -> blocks of the engine's local hit
        self._pending_load = {}     # request_id -> (first block, blocks) to load
        # Worker state.
        self._layers = {}           # layer name -> (index, K view, V view, layout)
        self._meta = None
        self._loads = []            # (ReqMeta, Load)
        self._saves = {}            # request_id -> Save
        self._failed_requests = set()
        self._load_errors = set()
        self._load_failures = {}    # request_id -> {engine block id: reason}
        self._load_sources = {}     # engine block id -> set of sources
        self._lock = threading.Lock()

    # ---- scheduler side -------------------------------------------------------------------

    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        tokens = list(request.prompt_token_ids)
        b = self.block_tokens
        first = num_computed_tokens // b
        if first * b != num_computed_tokens:
            return 0, False  # the local hit ends inside a block: nothing aligns
        loadable = self.client.lookup(tokens, first)
        self._stored_blocks[request.request_id] = loadable // b
        self._local_blocks[request.request_id] = first
        # At least one token must be computed: never the whole prompt.
        limit = ((len(tokens) - 1) // b) * b
        return max(0, min(loadable, limit) - num_computed_tokens), False

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        # The engine block ids arrive again with the scheduled request (build_connector_meta).
        if num_external_tokens <= 0:
            self._pending_load.pop(request.request_id, None)
            return
        first = self._local_blocks.get(request.request_id, 0)
        self._pending_load[request.request_id] = (first, num_external_tokens // self.block_tokens)

    def build_connector_meta(self, scheduler_output):
        meta = KVCSConnectorMetadata()
        b = self.block_tokens
        for r in scheduler_output.scheduled_new_reqs:
            tokens = list(r.prompt_token_ids)
            ids = _block_ids(r.block_ids)
            m = ReqMeta(request_id=r.req_id, token_ids=tokens, block_ids=ids)
            pending = self._pending_load.pop(r.req_id, None)
            if pending:  # num_computed_tokens counts the external tokens too (vLLM)
                m.load_first_block, m.load_blocks = pending
            full = len(tokens) // b
            stored = self._stored_blocks.pop(r.req_id, 0)
            self._local_blocks.pop(r.req_id, None)
            m.save_first_block = stored
            m.save_blocks = max(0, full - stored)
            meta.requests.append(m)
        return meta

    def request_finished(self, request, block_ids):
        self._stored_blocks.pop(request.request_id, None)
        self._local_blocks.pop(request.request_id, None)
        self._pending_load.pop(request.request_id, None)
        return False, None

    # ---- worker side ----------------------------------------------------------------------

    def register_kv_caches(self, kv_caches):
        self._layers = {}
        if len(kv_caches) != self.client.layers:
            raise ValueError("kvcs: %d KV caches registered, the model has %d layers"
                             % (len(kv_caches), self.client.layers))
        for i, (name, t) in enumerate(kv_caches.items()):
            k, v = layer_views(t)
            layout = paged_layout(k, self.block_tokens, self.kv_heads, self.head_dim)
            if paged_layout(v, self.block_tokens, self.kv_heads, self.head_dim) != layout:
                raise ValueError("kvcs: K and V of layer %s differ in layout" % name)
            self._layers[name] = (i, as_buffer(k), as_buffer(v), layout)

    def bind_connector_metadata(self, meta):
        self._meta = meta

    def clear_connector_metadata(self):
        self._meta = None

    def _layer(self, name):
        if name not in self._layers:
            raise KeyError("kvcs: unknown layer %r (not registered)" % name)
        return self._layers[name]

    def start_load_kv(self, forward_context=None, **kwargs):
        if not self._meta:
            return
        ordered = sorted(self._layers.values(), key=lambda x: x[0])
        buffers = [(k, v) for _, k, v, _ in ordered]
        for m in self._meta.requests:
            if m.load_blocks <= 0:
                continue
            first, n, b = m.load_first_block, m.load_blocks, self.block_tokens
            tokens = m.token_ids[:(first + n) * b]
            ids = m.block_ids[first:first + n]
            load = self.client.load(tokens, first, ids, buffers, ordered[0][3])
            self._loads.append((m, load))

    def wait_for_layer_load(self, layer_name):
        index = self._layer(layer_name)[0]
        for m, load in self._loads:
            failed, why = load.wait_layer_detail(index)
            sources = load.block_sources(index)
            with self._lock:
                for i, src in enumerate(sources):
                    bid = m.block_ids[m.load_first_block + i]
                    self._load_sources.setdefault(bid, set()).add(src)
            if failed:
                with self._lock:
                    self._failed_requests.add(m.request_id)
                    reasons = self._load_failures.setdefault(m.request_id, {})
                    for i in failed:
                        bid = m.block_ids[m.load_first_block + i]
                        self._load_errors.add(bid)
                        reasons.setdefault(bid, "layer %d: %s" % (index, why))

    def save_kv_layer(self, layer_name, kv_layer, attn_metadata=None, **kwargs):
        if not self._meta:
            return
        index, k, v, layout = self._layer(layer_name)
        for m in self._meta.requests:
            if m.save_blocks <= 0:
                continue
            save = self._saves.get(m.request_id)
            if save is None:
                first, n, b = m.save_first_block, m.save_blocks, self.block_tokens
                save = self.client.save(m.token_ids[:(first + n) * b], first,
                                        m.block_ids[first:first + n], layout)
                self._saves[m.request_id] = save
            save.save_layer(index, k, v)

    def wait_for_save(self):
        for m, load in self._loads:
            status, _ = load.finish()
            load.close()
            if status != "KVCS_OK":  # its failed blocks were listed as their layers were waited
                self._failed_requests.add(m.request_id)
        self._loads = []
        for request_id, save in self._saves.items():
            if request_id in self._failed_requests:
                save.close()  # computed over a prefix that failed to load: never stored
                continue
            save.finish()
            save.close()
        self._saves = {}
        self._failed_requests = set()

    def get_finished(self, finished_req_ids):
        return None, None

    def get_block_ids_with_load_errors(self):
        with self._lock:
            errors, self._load_errors = self._load_errors, set()
        return errors

    def get_load_failures(self):
        with self._lock:
            failures, self._load_failures = self._load_failures, {}
        return failures

    def get_block_load_sources(self):
        with self._lock:
            sources, self._load_sources = self._load_sources, {}
        return sources


__all__ = ["KVCSConnector", "KVCSConfig", "KVCSConnectorMetadata", "KVConnectorRole", "ReqMeta",
           "KvcsError"]
