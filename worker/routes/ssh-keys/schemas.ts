import { z } from "@hono/zod-openapi";
import { MAX_KEY_NAME, SUPPORTED_KEY_TYPES } from "../../services/ssh-keys/public-key";

const KEY_RULES = `one OpenSSH public key line, "<type> <base64> [comment]" (a .pub file); types ${SUPPORTED_KEY_TYPES.join(", ")}; RSA needs 2048 bits or more`;

export const SshKey = z
  .object({
    id: z.string(),
    user_id: z.string(),
    name: z.string(),
    public_key: z.string().openapi({ description: "normalized: `type base64 comment`" }),
    fingerprint: z.string().openapi({ description: "as `ssh-keygen -l` prints it", example: "SHA256:…" }),
    auto_inject: z.boolean().openapi({ description: "installed into every pod created afterwards" }),
    created_at: z.string(),
  })
  .openapi("SshKey");

const KeyName = z.string().trim().min(1).max(MAX_KEY_NAME);

export const CreateSshKeyRequest = z.object({
  public_key: z.string().max(16_384).openapi({ description: KEY_RULES }),
  name: KeyName.optional().openapi({ description: "default: the key's comment, else e.g. `ed25519 key`" }),
  auto_inject: z.boolean().default(false),
});

export const UpdateSshKeyRequest = z.object({
  name: KeyName.optional(),
  auto_inject: z.boolean().optional(),
  public_key: z
    .unknown()
    .refine((value) => value === undefined, {
      message: "key material cannot be edited; add the new key and delete this one",
    })
    .optional()
    .openapi({ description: "not editable: sending it is a 400" }),
});

export const SshKeyParams = z.object({
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" } }),
});
