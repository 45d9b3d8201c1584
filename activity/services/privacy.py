"""A shopper's activity leaves with their account."""

from activity.services import writer
from activity.services.partitions import activity_forget


def user_activity_delete(*, user_id) -> int:
    """Delete every logged event of the user ``user_id``, queued ones
    included (flushed first, so none lands after the delete). Returns how
    many were deleted."""
    writer.flush()
    return activity_forget(user=f"user:{user_id}")


def on_user_deleted(sender, instance, **kwargs) -> None:
    user_activity_delete(user_id=instance.pk)
