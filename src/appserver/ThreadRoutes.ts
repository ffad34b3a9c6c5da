// Who wants a notification, decided once at the reader: entries for every thread and entries for one thread, so a
// notification reaches only the entries that asked for it (no per-entry filtering of every message). A dropped line
// may have been about any thread, so every entry gets it. Used for the connection's subscriber queues and its inline
// observers alike.
export class ThreadRoutes<T> {
  private readonly every = new Set<T>()
  private readonly byThread = new Map<string, Set<T>>()

  add(threadId: string | undefined, entry: T): void {
    if (threadId === undefined) {
      this.every.add(entry)
      return
    }
    const set = this.byThread.get(threadId)
    if (set === undefined) this.byThread.set(threadId, new Set([entry]))
    else set.add(entry)
  }

  remove(threadId: string | undefined, entry: T): void {
    if (this.every.delete(entry) || threadId === undefined) return
    const set = this.byThread.get(threadId)
    if (set !== undefined && set.delete(entry) && set.size === 0) this.byThread.delete(threadId)
  }

  /** the entries for a notification about `threadId` (undefined: about no thread); `everyThread`: a dropped line */
  targets(threadId: string | undefined, everyThread: boolean): ReadonlyArray<T> {
    const set = everyThread ? undefined : threadId === undefined ? undefined : this.byThread.get(threadId)
    if (!everyThread && this.every.size === 0) return set === undefined ? none : [...set]
    const out: Array<T> = [...this.every]
    if (everyThread) this.byThread.forEach((s) => out.push(...s))
    else if (set !== undefined) out.push(...set)
    return out
  }

  /** every entry, and forgets them all */
  drain(): ReadonlyArray<T> {
    const all = [...this.every, ...[...this.byThread.values()].flatMap((set) => [...set])]
    this.every.clear()
    this.byThread.clear()
    return all
  }
}

const none: ReadonlyArray<never> = []
