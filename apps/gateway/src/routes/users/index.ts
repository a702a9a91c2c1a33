import { createUserRoute } from './create-user';
import { deleteUserRoute } from './delete-user';
import { getUserRoute } from './get-user';
import { listUsersRoute } from './list-users';
import { setPasswordRoute } from './set-password';
import { updateUserRoute } from './update-user';

export const userRoutes = [listUsersRoute, createUserRoute, getUserRoute, updateUserRoute, deleteUserRoute, setPasswordRoute];
