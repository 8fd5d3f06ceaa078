import { z } from "@hono/zod-openapi";

export const User = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string(),
    email_verified: z.boolean(),
    active_team_id: z.string(),
    created_at: z.string(),
  })
  .openapi("User");

export const AuthResult = z.object({ token: z.string(), user: User }).openapi("AuthResult");

export const Email = z.email().max(254);
export const Password = z.string().min(8).max(200);
export const PersonName = z.string().trim().min(1).max(100);

export const RegisterRequest = z.object({ email: Email, password: Password, name: PersonName });
export const LoginRequest = z.object({ email: z.string().max(254), password: z.string().max(200) });
export const TokenRequest = z.object({ token: z.string().min(1).max(200) });
