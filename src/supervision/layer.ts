// The supervision services as one Layer (S14-S17). It needs the harness's Settings (with `supervision`), its
// ClientPool (private branch connections live there, beside the ordinary ones), its SessionStore and a Transport;
// with the harness in the context (its SessionWork), branches get the full harness tool surface and its running turns count as owners.
import { Layer } from "effect"
import * as ArchiveGuard from "./ArchiveGuard.js"
import * as Branching from "./Branching.js"
import * as Catalog from "./Catalog.js"
import * as Discovery from "./Discovery.js"

export const layer = Layer.mergeAll(Branching.layer, ArchiveGuard.layer).pipe(
  Layer.provideMerge(Catalog.layer),
  Layer.provideMerge(Discovery.layer)
)
