/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: the device. The order of the driver's locks (DOC: Locking), and the
 * device-wide functions: probe and the module (gmem_accel_main.c), the character device,
 * registers, rings and interrupts (gmem_accel_hw.c), the watchdog and resets
 * (gmem_accel_reset.c), sysfs and debugfs. Each component has a header of its own.
 */
#ifndef GMEM_ACCEL_H
#define GMEM_ACCEL_H

#include <linux/dma-direction.h>

#include "gmem_accel_types.h"

/**
 * DOC: Locking
 *
 * Locks are taken in this order: one may be taken while holding those above it, never those
 * below it. Lockdep checks the order on the debug kernel (the guest suite fails on a report).
 *
 * 1. gmem_accel.lock (rwsem): the device against unbind; read by every file operation,
 *    written by unbind, which first sets gmem_accel.unbinding and wakes every waiter. Another
 *    device's is only tried, under mmap_lock (device-to-device migration, gmem_accel_peer.c).
 * 2. gmem_dmirror_state.cmd_lock (mutex): one test_hmm-interface command at a time per file.
 * 3. gmem_accel.fault_lock (mutex): the fault queue, held to take one group off it (nothing
 *    is taken under it); the group is then serviced without it, so that groups of different
 *    contexts are serviced at once (by the worker and the processes waiting for batches).
 *    gmem_ctx.fault_mutex: one fault server at a time per context, and its fault scratch.
 *    gmem_ctx.notifier_mutex: inserting a window's MMU notifier, which may take mmap_lock
 *    (so a window's notifier is inserted before it is held, gmem_notifier_get()).
 *    gmem_accel.ac_lock (mutex): the access counters' registers and notification ring; only
 *    ctx_lock is taken under it (a record's context looked up, gmem_accel_counters.c). The
 *    migration a record asks for runs without it, holding the context (gmem_ctx_get()).
 *    gmem_drm_svm.lock (mutex): a DRM front-end context's drm_gpusvm ranges, inserted and
 *    removed under it (drm_gpusvm's driver lock); taken by its fault hook under
 *    gmem_ctx.fault_mutex and by its garbage collector. drm_gpusvm's own notifier_lock
 *    (rwsem, written by its MMU notifier) comes after mmap_lock, before gmem_ctx.lock.
 * 4. mmap_lock of a process (read; for eviction with no munmap() in flight: written, then
 *    downgraded, gmem_mmap_read_lock_no_munmap()): VMAs during hmm_range_fault() and
 *    migrate_vma_*(), an HBM page's owner's VMAs during its eviction. A second mm is only
 *    ever trylocked. The eviction worker (gmem_evict_work()) takes an owner's for reading
 *    with nothing held; it is waited for only where no mmap_lock is held (a file's release,
 *    unbind).
 * 5. gmem_accel.ctx_lock (mutex): the context table and its ids, held only to look up or
 *    change them (nothing is taken under it; a CPU fault on an HBM page looks its process's
 *    contexts up holding that page's folio lock): a fault server holds a reference on its
 *    context (gmem_ctx_get()), not this lock, so one process's fault servicing never stalls
 *    another's close. A device-to-device migration looks at a peer's table under mmap_lock.
 * 6. folio locks: pages during migration and make_device_exclusive_range(). A move into HBM
 *    holds two windows' at once (the one whose copies are in flight while the next is set
 *    up, gmem_window_in_pipelined()): migrate_vma_setup() only trylocks them.
 * 7. gmem_ctx.lock (mutex): the context's device page table. The MMU notifier takes it, so
 *    under it nothing allocates memory that may enter reclaim (gmem_pt_reserve() allocates
 *    before it is taken); gmem_ctx_create() primes lockdep with fs_reclaim -> gmem_ctx.lock.
 * 8. gmem_accel.inv_lock (mutex): the TLB invalidation registers (taken under gmem_ctx.lock
 *    when a zap waits for the device TLB).
 * 9. gmem_queue.lock (mutex): a command ring's tail, sequence numbers and slots; never held
 *    with gmem_ctx.lock.
 * 10. gmem_accel.obj_lock (mutex): the device's list of objects; only an object's lock is
 *     taken under it (an object's last reference may drop under mmap_lock, in munmap).
 *     gmem_obj.lock (mutex): where an object is (eviction moves it; a managed object's device
 *     pages, gmem_accel_managed.c); taken under mmap_lock by a CPU fault, before gmem_ctx.lock
 *     by a device fault, and held by an eviction or a managed page's move while it unmaps the
 *     object (the MMU notifier then takes gmem_ctx.lock) and copies on queue 0.
 * 11. Spinlocks, under which no other lock of the driver's is taken:
 *     gmem_pt_spares.lock: spare table pages.
 *     gmem_hbm.lock: HBM chunk lists.
 *     gmem_dpm.lock: a DRM front-end device's HBM pages in use and its allocations (taken
 *     where a page is freed, under a page-table lock).
 *     gmem_file.objs (its xa_lock): a file's object handles.
 *     gmem_obj.peer_lock: the devices an object was imported on.
 *     gmem_queue.fence_lock (irqsave: the queue's interrupt takes it): its armed dma-fences.
 *     gmem_dma_fence.lock: a fence's own, which dma_fence_signal() takes; never taken with
 *     gmem_queue.fence_lock held.
 *     gmem_ctx.thrash (its xa_lock): the context's thrashing state; its memory is allocated
 *     before it is taken.
 *
 * gmem_notifier_srcu (SRCU, gmem_notifiers_enter()): read across any of the above by whoever
 * looks a window's notifier up; an unmapped window's notifier is freed after its readers by
 * gmem_notifier_gc(), which waits for them holding no lock.
 *
 * Functions documented "called with X held" assert it (lockdep_assert_held()).
 */

/* gmem_accel_hw.c: rings, interrupts, TLB invalidation */
int gmem_hw_init(struct gmem_accel *g);
void gmem_hw_fini(struct gmem_accel *g);
void gmem_queue_program(struct gmem_accel *g, struct gmem_queue *q);
void gmem_fq_program(struct gmem_accel *g);
void gmem_tlb_invalidate(struct gmem_accel *g, unsigned int ctx, u64 va, u64 size);

/* gmem_accel_reset.c: the watchdog; hung engines and resets under the driver */
void gmem_watchdog(struct work_struct *work);
void gmem_watchdog_start(struct gmem_accel *g);
void gmem_device_reset(struct gmem_accel *g, const char *why);

/* gmem_accel_main.c: probe, remove, the module; every bound device */
typedef int (*gmem_device_fn)(struct device *dev, void *data);
int gmem_walk_devices(void *data, gmem_device_fn fn);

/* gmem_accel_peer.c: another device's HBM reached peer to peer (both front ends) */
dma_addr_t gmem_peer_map_hbm(struct device *dma_dev, struct gmem_accel *peer, u64 off,
			     size_t size, enum dma_data_direction dir);
void gmem_peer_unmap_hbm(struct device *dma_dev, dma_addr_t bar, size_t size,
			 enum dma_data_direction dir);

/*
 * A 0644 module parameter @name, an unsigned int (default @def) that takes only writes in
 * [@lo, @hi]: anything else is -EINVAL and leaves it unchanged. @changed (or NULL) is called
 * after each write. Readers READ_ONCE() @name itself.
 */
struct gmem_param_range {
	unsigned int *val;
	unsigned int min, max;
	void (*changed)(void);
};
extern const struct kernel_param_ops gmem_param_range_ops;

#define GMEM_PARAM_RANGE(name, def, lo, hi, changed, desc)				\
	static unsigned int name = def;							\
	static struct gmem_param_range name##_range = { &name, lo, hi, changed };	\
	module_param_cb(name, &gmem_param_range_ops, &name##_range, 0644);		\
	MODULE_PARM_DESC(name, desc)

/* gmem_accel_chardev.c: file life cycle shared by every node */
struct gmem_file *gmem_file_new(struct gmem_accel *g);
void gmem_file_free(struct gmem_file *f);
int gmem_file_open(struct gmem_accel *g, struct file *file);
int gmem_file_release(struct file *file);

/* gmem_accel_debugfs.c: /sys/kernel/debug/gmem_accel/gmem_accelN/ */
void gmem_debugfs_init(void);
void gmem_debugfs_exit(void);
void gmem_debugfs_add(struct gmem_accel *g);
void gmem_debugfs_remove(struct gmem_accel *g);

extern const struct file_operations gmem_accel_fops;
extern const struct attribute_group *gmem_accel_groups[];

#endif /* GMEM_ACCEL_H */
