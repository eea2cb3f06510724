// The vfsd contract's tools: each one's parameters and receipt, as the API
// description's x-vfsd-tools gives them (a test holds this map to it).

import type * as T from "./schema.js";

/** Each tool of the vfsd contract (a session's default): its parameters and its receipt on success. */
export interface VfsdTools {
  apply_patch: { params: T.ApplyPatchParams; receipt: T.ApplyPatchReceipt };
  checkpoint: { params: T.CheckpointParams; receipt: T.CheckpointReceipt };
  delete_file: { params: T.DeleteFileParams; receipt: T.DeleteFileReceipt };
  diff_since: { params: T.DiffSinceParams; receipt: T.DiffSinceReceipt };
  edit_file: { params: T.EditFileParams; receipt: T.EditFileReceipt };
  exists: { params: T.ExistsParams; receipt: T.ExistsReceipt };
  glob: { params: T.GlobParams; receipt: T.GlobReceipt };
  grep: { params: T.GrepParams; receipt: T.GrepReceipt };
  list_checkpoints: { params: T.ListCheckpointsParams; receipt: T.ListCheckpointsReceipt };
  list_directory: { params: T.ListDirectoryParams; receipt: T.ListDirectoryReceipt };
  mkdir: { params: T.MkdirParams; receipt: T.MkdirReceipt };
  read_file: { params: T.ReadFileParams; receipt: T.ReadFileReceipt };
  rename: { params: T.RenameParams; receipt: T.RenameReceipt };
  stat: { params: T.StatParams; receipt: T.StatReceipt };
  undo_to: { params: T.UndoToParams; receipt: T.UndoToReceipt };
  write_file: { params: T.WriteFileParams; receipt: T.WriteFileReceipt };
}

export type VfsdToolName = keyof VfsdTools;

/** The tools of the vfsd contract. */
export const VFSD_TOOLS: readonly VfsdToolName[] = [
  "apply_patch", "checkpoint", "delete_file", "diff_since", "edit_file", "exists", "glob", "grep",
  "list_checkpoints", "list_directory", "mkdir", "read_file", "rename", "stat", "undo_to", "write_file",
];
